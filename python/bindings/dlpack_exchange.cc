#include "dlpack_exchange.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>

#include "tesscpp/cuda.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

// DLPack 1.x's C ABI (dlpack.h, v1.3 for the exchange table), declared here
// by hand: nanobind keeps its own copy private, and torch's ships only inside
// its wheel. Major version 1 keeps this layout; the exchange table's header
// (version, then a link to an older table) is meant never to change.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2 };
struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};
struct DLPackExchangeAPI {
  DLPackVersion version;
  const void* prev_api;
  void* managed_tensor_allocator;
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);
  void* managed_tensor_to_py_object_no_sync;
  void* dltensor_from_py_object_no_sync;
  int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void** out_current_stream);
};

constexpr uint8_t kDLComplex = 5;

// The table named by a type attribute: a capsule "dlpack_exchange_api" (the
// standard), or the table's address as an int (torch's first release of it;
// anything below a page is no address).
const DLPackExchangeAPI* TableOf(PyObject* attribute) {
  void* pointer = nullptr;
  if (PyCapsule_CheckExact(attribute)) {
    pointer = PyCapsule_GetPointer(attribute, "dlpack_exchange_api");
  } else if (PyLong_CheckExact(attribute)) {
    pointer = PyLong_AsVoidPtr(attribute);
    if (reinterpret_cast<uintptr_t>(pointer) < 4096) pointer = nullptr;
  }
  if (pointer == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  const auto* api = static_cast<const DLPackExchangeAPI*>(pointer);
  const bool usable = api->version.major == 1 && api->managed_tensor_from_py_object_no_sync != nullptr &&
                      api->current_work_stream != nullptr;
  return usable ? api : nullptr;
}

// The exchange table `type` defines itself. An inherited table is not used:
// a subclass may export its arrays its own way (a wrapper subclass has no
// storage of its own), and its `__dlpack__` says how. Looked up on every
// call (two lookups in the type's own dict) rather than cached per type: a
// cache would keep every class it saw alive, and miss a table set later.
const DLPackExchangeAPI* ExchangeApiOf(PyTypeObject* type) {
  // TESSCPP_DLPACK_EXCHANGE=0 takes every array the `__dlpack__` way (an
  // escape hatch should a framework's table misbehave, and the A/B switch).
  static const bool enabled = [] {
    const char* setting = std::getenv("TESSCPP_DLPACK_EXCHANGE");
    return setting == nullptr || std::string_view(setting) != "0";
  }();
  if (!enabled) return nullptr;
  static PyObject* const names[] = {PyUnicode_InternFromString("__dlpack_c_exchange_api__"),
                                    PyUnicode_InternFromString("__c_dlpack_exchange_api__")};
#if PY_VERSION_HEX >= 0x030C0000
  nb::object own = nb::steal(PyType_GetDict(type));
#else
  nb::object own = nb::borrow(type->tp_dict);
#endif
  if (!own.is_valid()) return nullptr;
  for (PyObject* name : names) {
    PyObject* attribute = PyDict_GetItemWithError(own.ptr(), name);  // borrowed
    if (attribute == nullptr) {
      PyErr_Clear();
      continue;
    }
    if (const DLPackExchangeAPI* api = TableOf(attribute)) return api;
  }
  return nullptr;
}

bool IsCContiguous(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t d = tensor.ndim; d-- > 0;) {
    if (tensor.shape[d] != 1 && tensor.strides[d] != expected) return false;
    expected *= tensor.shape[d];
  }
  return true;
}

// Orders tesscpp's consumer stream (the legacy default stream) after the
// framework's current one on the GPU, as `__dlpack__(stream=1)` does: nothing
// when that is the legacy stream (0 or 1), else an event; a per-thread
// default stream (2, which torch never reports) gets the defensive device
// synchronisation the CUDA array interface path gives it.
Status OrderAfterWorkStream(const DLPackExchangeAPI& api, int32_t ordinal, bool& asked) {
  void* stream = nullptr;
  asked = api.current_work_stream(kDLCUDA, ordinal, &stream) == 0;
  if (!asked) {
    PyErr_Clear();
    return Status::OK();
  }
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  if (handle == 0 || handle == 1) return Status::OK();
  nb::gil_scoped_release release;
  return handle == 2 ? cuda::SynchronizeDevice(ordinal) : cuda::OrderAfterStream(handle, ordinal);
}

}  // namespace

Result<std::optional<Tensor>> ImportByExchangeApi(nb::handle object, bool cuda_usable) {
  const DLPackExchangeAPI* api = ExchangeApiOf(Py_TYPE(object.ptr()));
  if (api == nullptr) return std::optional<Tensor>();
  DLManagedTensorVersioned* managed = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(object.ptr(), &managed) != 0 || managed == nullptr) {
    PyErr_Clear();  // the `__dlpack__` way says what is wrong
    return std::optional<Tensor>();
  }
  // Released as the last Buffer copy goes, with the GIL: the framework's
  // deleter may drop Python objects.
  std::shared_ptr<DLManagedTensorVersioned> owner(managed, [](DLManagedTensorVersioned* m) {
    if (m->deleter == nullptr) return;
    nb::gil_scoped_acquire gil;
    m->deleter(m);
  });
  if (managed->version.major != 1) return std::optional<Tensor>();
  const DLTensor& dl = managed->dl_tensor;
  // Complex arrays go the `__dlpack__` way, which refuses torch's lazily
  // conjugated views instead of handing over their unconjugated bytes.
  if (dl.dtype.code == kDLComplex || !IsCContiguous(dl)) return std::optional<Tensor>();
  Result<Dtype> dtype = DtypeFromDlpack(DlpackDtype{dl.dtype.code, dl.dtype.bits, dl.dtype.lanes});
  if (!dtype.ok()) return std::optional<Tensor>();
  Device device;
  if (dl.device.device_type == kDLCUDA && cuda_usable) {
    device = Device::CUDA(dl.device.device_id);
  } else if (dl.device.device_type != kDLCPU) {
    return std::optional<Tensor>();
  }
  Result<Shape> shape = Shape::Make(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim));
  if (!shape.ok()) return std::optional<Tensor>();
  if (device.type == DeviceType::kCUDA) {
    bool asked = false;
    Status ready = OrderAfterWorkStream(*api, dl.device.device_id, asked);
    if (!asked) return std::optional<Tensor>();
    TESS_RETURN_IF_ERROR(ready);
  }
  const int64_t nbytes = shape->num_elements() * ItemSize(*dtype);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Make(*dtype, *std::move(shape),
                                                    Buffer::Wrap(data, nbytes, std::move(owner)), device));
  return std::optional<Tensor>(std::move(tensor));
}

}  // namespace tesscpp::bindings
