#include "from_python.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlpack_exchange.h"
#include "gil_calls.h"
#include "python_errors.h"
#include "tesscpp/cuda.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

std::string PathText(const std::vector<std::string>& path) {
  std::string text;
  for (const std::string& part : path) text += (text.empty() ? "" : ".") + part;
  return text.empty() ? std::string("inputs") : text;
}

[[noreturn]] void RaiseType(const std::vector<std::string>& path, const std::string& problem) {
  throw nb::type_error((PathText(path) + ": " + problem).c_str());
}

using BorrowedArray = nb::ndarray<nb::ro>;

bool IsCContiguous(const BorrowedArray& array) {
  int64_t expected = 1;
  for (size_t d = array.ndim(); d-- > 0;) {
    if (array.shape(d) != 1 && array.stride(d) != expected) return false;
    expected *= static_cast<int64_t>(array.shape(d));
  }
  return true;
}

// CUDA arrays are passed on as CUDA tensors where this process can use CUDA
// (the client then sends them by IPC handle, or copies them to the host
// itself); elsewhere they go through the framework's own host copy.
bool CudaUsable() {
  static const bool usable = cuda::CheckAvailable().ok();
  return usable;
}

// The array's values as a C-contiguous, native-endian host array: a copy made
// by NumPy (after torch's own .cpu() for device tensors).
nb::object HostContiguous(nb::object array) {
  if (nb::hasattr(array, "__dlpack_device__") && nb::hasattr(array, "cpu")) array = array.attr("cpu")();
  nb::object numpy = NumpyModule();
  nb::object host = numpy.attr("asarray")(array);
  if (!nb::cast<bool>(host.attr("dtype").attr("isnative"))) {
    host = host.attr("astype")(host.attr("dtype").attr("newbyteorder")("="));
  }
  return numpy.attr("ascontiguousarray")(host);
}

// A Tensor over the array's memory; the DLPack export is released with the
// last Buffer copy.
Tensor BorrowArray(BorrowedArray array, Device device, const std::vector<std::string>& path) {
  const nb::dlpack::dtype dl = array.dtype();
  Result<Dtype> dtype = DtypeFromDlpack(DlpackDtype{dl.code, dl.bits, dl.lanes});
  if (!dtype.ok()) RaiseType(path, dtype.status().message());
  std::vector<int64_t> dims(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d) dims[d] = static_cast<int64_t>(array.shape(d));
  Result<Shape> shape = Shape::Make(std::move(dims));
  if (!shape.ok()) RaiseType(path, shape.status().message());
  const auto nbytes = static_cast<int64_t>(array.nbytes());
  std::shared_ptr<BorrowedArray> owner = GilShared(std::move(array));
  Buffer buffer = Buffer::Wrap(const_cast<void*>(owner->data()), nbytes, owner);
  return Unwrap(Tensor::Make(*dtype, *std::move(shape), std::move(buffer), device));
}

// The dtype of a CUDA array interface typestr ("<f4", "|b1"; native byte order only).
Dtype DtypeOfTypestr(const std::string& typestr, const std::vector<std::string>& path) {
  if (typestr.size() < 3 || (typestr[0] != '<' && typestr[0] != '|' && typestr[0] != '=')) {
    RaiseType(path, "unsupported __cuda_array_interface__ typestr '" + typestr + "' (little-endian only)");
  }
  const char kind = typestr[1];
  const int bits = std::atoi(typestr.c_str() + 2) * 8;
  const uint8_t code = kind == 'i'   ? 0
                       : kind == 'u' ? 1
                       : kind == 'f' ? 2
                       : kind == 'c' ? 5
                       : kind == 'b' ? 6
                                     : 255;
  Result<Dtype> dtype = DtypeFromDlpack(DlpackDtype{code, static_cast<uint8_t>(bits), 1});
  if (code == 255 || !dtype.ok())
    RaiseType(path, "unsupported __cuda_array_interface__ typestr '" + typestr + "'");
  return *dtype;
}

// A producer that offers only the CUDA array interface (Numba, older CuPy,
// hand-made views): its memory borrowed as a CUDA tensor. The stream rules
// of CAI v3: tesscpp's consumer stream, the legacy default stream, is made to
// wait on the GPU for a named stream (1 = legacy default, else a
// cudaStream_t; 2, another thread's per-thread stream, cannot be named here,
// so the device is synchronised); none means the data is ready. Version 2
// names no stream, so the device is synchronised once (CV-CUDA's defensive
// rule).
Tensor ImportCai(const nb::object& object, const std::vector<std::string>& path) {
  const nb::dict cai = nb::cast<nb::dict>(object.attr("__cuda_array_interface__"));
  auto field = [&](const char* key) { return cai.contains(key) ? nb::object(cai[key]) : nb::none(); };
  if (!field("mask").is_none()) RaiseType(path, "masked __cuda_array_interface__ arrays are not supported");
  std::vector<int64_t> dims;
  for (nb::handle d : nb::cast<nb::tuple>(field("shape"))) dims.push_back(nb::cast<int64_t>(d));
  const Dtype dtype = DtypeOfTypestr(nb::cast<std::string>(field("typestr")), path);
  Result<Shape> shape = Shape::Make(dims);
  if (!shape.ok()) RaiseType(path, shape.status().message());
  if (!field("strides").is_none()) {
    int64_t expected = ItemSize(dtype);
    const auto strides = nb::cast<std::vector<int64_t>>(field("strides"));
    for (size_t d = dims.size(); d-- > 0;) {
      if (dims[d] != 1 && strides.at(d) != expected) {
        RaiseType(path, "a strided __cuda_array_interface__ array: make it C-contiguous first");
      }
      expected *= dims[d];
    }
  }
  const auto data = nb::cast<std::pair<uintptr_t, bool>>(field("data"));
  const int64_t nbytes = shape->num_elements() * ItemSize(dtype);
  auto* pointer = reinterpret_cast<void*>(data.first);
  int ordinal = 0;
  if (nbytes > 0) ordinal = Unwrap(cuda::DeviceOfPointer(pointer));
  const int version = nb::cast<int>(field("version"));
  const nb::object stream_field = field("stream");
  const std::optional<uintptr_t> stream =
      stream_field.is_none() ? std::nullopt : std::optional<uintptr_t>(nb::cast<uintptr_t>(stream_field));
  Status ready;
  if (stream && *stream == 0) {
    ready = Status::InvalidArgument("__cuda_array_interface__ stream 0 is not allowed");
  } else if (nbytes > 0) {
    nb::gil_scoped_release release;
    if (version < 3 || (stream && *stream == 2)) {
      ready = cuda::SynchronizeDevice(ordinal);
    } else if (stream) {
      ready = cuda::OrderAfterStream(*stream, ordinal);
    }
  }
  if (!ready.ok()) RaiseType(path, ready.message());
  std::shared_ptr<nb::object> owner = GilShared(object);
  return Unwrap(
      Tensor::Make(dtype, *std::move(shape), Buffer::Wrap(pointer, nbytes, owner), Device::CUDA(ordinal)));
}

bool OnCudaDevice(const nb::object& object) {
  if (!nb::hasattr(object, "__dlpack_device__") || !nb::hasattr(object, "__dlpack__")) return false;
  const auto device = nb::cast<nb::tuple>(object.attr("__dlpack_device__")());
  return nb::cast<int32_t>(device[0]) == nb::device::cuda::value;
}

// The array behind a DLPack producer. A CUDA producer is asked for it as a
// consumer on the legacy default stream (__dlpack__(stream=1), CV-CUDA's
// rule), so it makes that stream wait on the GPU for its own current stream
// and the host never blocks; everything tesscpp does with device memory is
// ordered after that stream (cuda::OrderAfterStream says why). A producer
// that refuses the stream argument gets one defensive device synchronisation.
bool CastArray(const nb::object& object, const std::vector<std::string>& path, BorrowedArray& array) {
  if (!CudaUsable() || !OnCudaDevice(object)) return nb::try_cast(object, array, /*convert=*/false);
  nb::object capsule;
  try {
    capsule = object.attr("__dlpack__")(nb::arg("stream") = 1);
  } catch (nb::python_error&) {
    if (!nb::try_cast(object, array, /*convert=*/false)) return false;
    const auto ordinal = static_cast<int>(array.device_id());
    Status ready;
    {
      nb::gil_scoped_release release;
      ready = cuda::SynchronizeDevice(ordinal);
    }
    if (!ready.ok()) RaiseType(path, ready.message());
    return true;
  }
  return nb::try_cast(capsule, array, /*convert=*/false);
}

Tensor ImportArray(nb::handle handle, const std::vector<std::string>& path) {
  nb::object object = nb::borrow(handle);
  if (nb::hasattr(object, "requires_grad") && nb::cast<bool>(object.attr("requires_grad"))) {
    // A tensor that requires grad refuses DLPack; its values are what is sent.
    object = object.attr("detach")();
  }
  if (nb::hasattr(object, "is_neg") && nb::cast<bool>(object.attr("is_neg")())) {
    // A lazily negated torch view (the imaginary part of a conjugate): its
    // memory holds the values without the sign, and DLPack has no bit for it.
    object = object.attr("resolve_neg")();
  }
  Result<std::optional<Tensor>> exchanged = ImportByExchangeApi(object, CudaUsable());
  if (!exchanged.ok()) RaiseType(path, exchanged.status().message());
  if (*exchanged) return **std::move(exchanged);
  BorrowedArray array;
  bool borrowed = CastArray(object, path, array);
  if (!borrowed && nb::hasattr(object, "__cuda_array_interface__") && CudaUsable())
    return ImportCai(object, path);
  if (borrowed && array.device_type() == nb::device::cuda::value && CudaUsable()) {
    if (!IsCContiguous(array) && nb::hasattr(object, "contiguous")) {
      object = object.attr("contiguous")();  // on the device, as the SDK does
      borrowed = CastArray(object, path, array);
    }
    if (borrowed && IsCContiguous(array)) {
      const auto ordinal = static_cast<int32_t>(array.device_id());
      return BorrowArray(std::move(array), Device::CUDA(ordinal), path);
    }
  }
  if (!borrowed || array.device_type() != nb::device::cpu::value || !IsCContiguous(array)) {
    try {
      object = HostContiguous(object);
    } catch (nb::python_error& e) {
      RaiseType(path, std::string("cannot read this array: ") + e.what());
    }
    if (!nb::try_cast(object, array, /*convert=*/false)) RaiseType(path, "cannot read this array");
  }
  return BorrowArray(std::move(array), Device::CPU(), path);
}

bool IsArrayLike(nb::handle handle) {
  return nb::hasattr(handle, "__dlpack__") || nb::hasattr(handle, "__array__") ||
         nb::hasattr(handle, "__cuda_array_interface__");
}

// How a conversion treats what a Value cannot hold.
struct Conversion {
  nb::handle fallback;               // called on values of other types (may be null)
  bool wide_ints_as_double = false;  // integers beyond 64 bits: the nearest double, else refused
};

Value ToValue(nb::handle handle, std::vector<std::string>& path, const Conversion& how) {
  if (handle.is_none()) return Value();
  if (PyBool_Check(handle.ptr())) return Value(handle.ptr() == Py_True);
  if (PyDict_Check(handle.ptr())) {
    Value::Dict dict;
    for (auto [key, item] : nb::borrow<nb::dict>(handle)) {
      if (!PyUnicode_Check(key.ptr())) RaiseType(path, "dict keys must be strings");
      std::string name = nb::cast<std::string>(key);
      path.push_back(name);
      Value converted = ToValue(item, path, how);
      path.pop_back();
      dict.set(std::move(name), std::move(converted));
    }
    return Value(std::move(dict));
  }
  if (PyList_Check(handle.ptr()) || PyTuple_Check(handle.ptr())) {
    Value::List list;
    size_t index = 0;
    for (nb::handle item : handle) {
      path.push_back("[" + std::to_string(index++) + "]");
      list.push_back(ToValue(item, path, how));
      path.pop_back();
    }
    return Value(std::move(list));
  }
  if (PyUnicode_Check(handle.ptr())) return Value(nb::cast<std::string>(handle));
  // Plain Python numbers before the attribute lookups of IsArrayLike, which
  // long lists of numbers would otherwise pay per element. NumPy scalars are
  // neither (np.float64 subclasses float, but not exactly) and go on to be
  // arrays on the wire, as the SDK sends them.
  if (PyFloat_CheckExact(handle.ptr())) return Value(PyFloat_AsDouble(handle.ptr()));
  if (PyLong_Check(handle.ptr())) {
    int overflow = 0;
    const long long small = PyLong_AsLongLongAndOverflow(handle.ptr(), &overflow);
    if (overflow == 0) return Value(static_cast<int64_t>(small));
    const unsigned long long big = PyLong_AsUnsignedLongLong(handle.ptr());
    if (PyErr_Occurred() == nullptr) return Value(static_cast<uint64_t>(big));
    PyErr_Clear();
    if (!how.wide_ints_as_double) RaiseType(path, "integer does not fit 64 bits");
    // Beyond the double range too: the signed infinity, as float() would overflow to.
    const double nearest = PyLong_AsDouble(handle.ptr());
    if (PyErr_Occurred() == nullptr) return Value(nearest);
    PyErr_Clear();
    return Value(overflow < 0 ? -HUGE_VAL : HUGE_VAL);
  }
  if (IsArrayLike(handle)) return Value(ImportArray(handle, path));
  if (PyFloat_Check(handle.ptr())) return Value(PyFloat_AsDouble(handle.ptr()));
  if (how.fallback.is_valid()) return ToValue(how.fallback(handle), path, Conversion{});
  RaiseType(path, std::string("cannot send a value of type ") + nb::type_name(handle.type()).c_str());
}

}  // namespace

Value ToValue(nb::handle handle) {
  std::vector<std::string> path;
  return ToValue(handle, path, Conversion{});
}

Value ToValue(nb::handle handle, nb::handle fallback) {
  std::vector<std::string> path;
  return ToValue(handle, path, Conversion{fallback});
}

Value JsonDetailToValue(nb::handle handle) {
  std::vector<std::string> path;
  return ToValue(handle, path, Conversion{nb::handle(), /*wide_ints_as_double=*/true});
}

}  // namespace tesscpp::bindings
