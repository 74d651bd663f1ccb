// _tesscpp: the nanobind module under the tesscpp Python package.
//
// It exposes tesscpp::Tesseract as _Tesseract and converts at the boundary:
// Python containers and scalars become Value trees, arrays (anything with
// __dlpack__ or __array__: NumPy, torch, ...) become Tensors that borrow the
// caller's memory through DLPack, and decoded Tensors come back as writable
// NumPy arrays that own a reference to the C++ buffer. Neither direction
// copies array bytes when the memory is CPU, C-contiguous and native-endian;
// anything else is made so once through NumPy. The GIL is released for the
// length of every call into the client. A failed Status becomes the Python
// exception a tesseract-core user expects (see RaiseStatus).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/python_exception.h"
#include "tesscpp/client.h"
#include "tesscpp/cuda.h"
#include "tesscpp/cuda_transfer.h"
#include "tesscpp/validation_issue.h"
#include "tesscpp/value.h"

namespace nb = nanobind;

namespace tesscpp::internal {
namespace {

// ---------------------------------------------------------------------------
// Errors

// tesscpp._tesscpp.ValidationFailure(message, title, errors): a 422 or a
// failed in-process validation. The Python layer turns it into pydantic's
// ValidationError when pydantic is importable.
nb::object& ValidationFailureType() {
  static auto* type = new nb::object();  // leaked: must outlive interpreter teardown order
  return *type;
}

nb::object ToPython(const Value& value);

nb::object IssueToPython(const ValidationIssue& issue) {
  nb::list loc;
  for (const Value& part : issue.loc) loc.append(ToPython(part));
  nb::dict item;
  item["type"] = nb::str(issue.type.c_str());
  item["loc"] = nb::tuple(loc);
  item["msg"] = nb::str(issue.msg.c_str());
  item["input"] = ToPython(issue.input);
  item["ctx"] = ToPython(issue.ctx);
  return item;
}

// pydantic's title is what follows " for " on the first line of the summary
// ("2 validation errors for endpoint apply"); "" when the summary names none.
std::string ValidationTitle(const std::string& message) {
  const std::string first_line = message.substr(0, message.find('\n'));
  const size_t at = first_line.find(" for ");
  return at == std::string::npos ? std::string() : first_line.substr(at + 5);
}

[[noreturn]] void RaiseStatus(const Status& status) {
  const std::string& message = status.message();
  if (const ValidationDetail* detail = GetValidationDetail(status); detail != nullptr) {
    nb::list errors;
    for (const ValidationIssue& issue : detail->issues()) errors.append(IssueToPython(issue));
    nb::tuple args =
        nb::make_tuple(nb::str(message.c_str()), nb::str(ValidationTitle(message).c_str()), errors);
    PyErr_SetObject(ValidationFailureType().ptr(), args.ptr());
    throw nb::python_error();
  }
  const PythonContext context =
      GetHttpErrorDetail(status) != nullptr ? PythonContext::kServerAnswer : PythonContext::kCall;
  const nb::object type = nb::module_::import_("builtins").attr(PythonExceptionName(status.code(), context));
  nb::object error = type(nb::str(message.c_str()));
  // Detail that is not part of the message, as an exception note (the
  // message stays what callers match on).
  if (const ServedEndpointsDetail* served = GetServedEndpointsDetail(status); served != nullptr) {
    error.attr("add_note")(nb::str(served->ToString().c_str()));
  }
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) RaiseStatus(result.status());
  return std::move(result).value();
}

void Check(const Status& status) {
  if (!status.ok()) RaiseStatus(status);
}

// ---------------------------------------------------------------------------
// Python -> Value

// Holds a Python object from C++ code that may run without the GIL; the last
// reference is dropped with the GIL taken.
template <typename T>
std::shared_ptr<T> GilShared(T object) {
  return std::shared_ptr<T>(new T(std::move(object)), [](T* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

nb::object& NumpyModule() {
  static auto* numpy = new nb::object(nb::module_::import_("numpy"));
  return *numpy;
}

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

Value ToValue(nb::handle handle, std::vector<std::string>& path) {
  if (handle.is_none()) return Value();
  if (PyBool_Check(handle.ptr())) return Value(handle.ptr() == Py_True);
  if (PyDict_Check(handle.ptr())) {
    Value::Dict dict;
    for (auto [key, item] : nb::borrow<nb::dict>(handle)) {
      if (!PyUnicode_Check(key.ptr())) RaiseType(path, "dict keys must be strings");
      std::string name = nb::cast<std::string>(key);
      path.push_back(name);
      Value converted = ToValue(item, path);
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
      list.push_back(ToValue(item, path));
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
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      RaiseType(path, "integer does not fit 64 bits");
    }
    return Value(static_cast<uint64_t>(big));
  }
  if (IsArrayLike(handle)) return Value(ImportArray(handle, path));
  if (PyFloat_Check(handle.ptr())) return Value(PyFloat_AsDouble(handle.ptr()));
  RaiseType(path, std::string("cannot send a value of type ") + nb::type_name(handle.type()).c_str());
}

Value ToValue(nb::handle handle) {
  std::vector<std::string> path;
  return ToValue(handle, path);
}

// ---------------------------------------------------------------------------
// Value -> Python

// A CUDA tensor handed to Python: tesscpp._tesscpp.DeviceArray, which
// frameworks adopt without a copy through DLPack or the CUDA array interface.
// Its bytes are complete when it is made (the transport synchronised its
// copy), so it names no stream and needs none from its consumer.
struct DeviceArray {
  Tensor tensor;
};

// A DLPack capsule over a CUDA tensor, keeping the C++ buffer alive:
// versioned (DLPack 1.x) when the consumer's max_version allows it, the
// legacy "dltensor" otherwise (nanobind's array-API export does both).
nb::object DlpackCapsule(const Tensor& tensor, const nb::object& max_version) {
  std::vector<size_t> shape(tensor.shape().dims().begin(), tensor.shape().dims().end());
  const DlpackDtype dl = ToDlpack(tensor.dtype());
  auto* keep = new Buffer(tensor.buffer());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  nb::ndarray<nb::array_api> array(tensor.data(), shape.size(), shape.data(), owner, nullptr,
                                   nb::dlpack::dtype{dl.code, dl.bits, dl.lanes}, nb::device::cuda::value,
                                   tensor.device().id);
  nb::object exported = array.cast();
  if (max_version.is_none()) return exported.attr("__dlpack__")();
  return exported.attr("__dlpack__")(nb::arg("max_version") = max_version);
}

nb::tuple ShapeTuple(const Tensor& tensor) {
  return nb::tuple(
      nb::cast(std::vector<int64_t>(tensor.shape().dims().begin(), tensor.shape().dims().end())));
}

// NumPy's typestr of the dtype ("<f4", "|b1"), for the CUDA array interface.
std::string Typestr(Dtype dtype) {
  const DlpackDtype dl = ToDlpack(dtype);
  const char kind = dl.code == 0 ? 'i' : dl.code == 1 ? 'u' : dl.code == 2 ? 'f' : dl.code == 5 ? 'c' : 'b';
  const int itemsize = dl.bits / 8;
  return std::string(itemsize == 1 ? "|" : "<") + kind + std::to_string(itemsize);
}

nb::object ExportArray(const Tensor& tensor) {
  if (tensor.device().type == DeviceType::kCUDA) return nb::cast(DeviceArray{tensor});
  std::vector<size_t> shape(tensor.shape().dims().begin(), tensor.shape().dims().end());
  const DlpackDtype dl = ToDlpack(tensor.dtype());
  if (tensor.nbytes() == 0) {
    return NumpyModule().attr("empty")(nb::tuple(nb::cast(shape)),
                                       nb::str(std::string(DtypeName(tensor.dtype())).c_str()));
  }
  // The array keeps the C++ buffer alive; it is writable, as a decoded response
  // belongs to the caller alone.
  auto* keep = new Buffer(tensor.buffer());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  nb::ndarray<nb::numpy> array(tensor.data(), shape.size(), shape.data(), owner, nullptr,
                               nb::dlpack::dtype{dl.code, dl.bits, dl.lanes});
  return array.cast();
}

nb::object ToPython(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNull: return nb::none();
    case Value::Kind::kBool: return nb::bool_(value.as_bool());
    case Value::Kind::kInt:
      if (value.is_big_uint()) return nb::steal(PyLong_FromUnsignedLongLong(value.as_uint()));
      return nb::int_(value.as_int());
    case Value::Kind::kFloat: return nb::float_(value.as_number());
    case Value::Kind::kString: return nb::str(value.as_string().c_str(), value.as_string().size());
    case Value::Kind::kList: {
      nb::list list;
      for (const Value& item : value.as_list()) list.append(ToPython(item));
      return list;
    }
    case Value::Kind::kDict: {
      nb::dict dict;
      for (const auto& [key, item] : value.as_dict()) dict[nb::str(key.c_str(), key.size())] = ToPython(item);
      return dict;
    }
    case Value::Kind::kTensor: return ExportArray(value.as_tensor());
  }
  return nb::none();
}

// ---------------------------------------------------------------------------
// Calls

// Runs `call` (returning a Result<T> or a Status) without the GIL, then
// returns the T (or nothing) with the GIL taken again, raising on an error.
template <typename Fn>
auto Released(Fn&& call) {
  using Outcome = decltype(call());
  std::optional<Outcome> outcome;
  {
    nb::gil_scoped_release release;
    outcome.emplace(call());
  }
  if constexpr (std::is_same_v<Outcome, Status>) {
    Check(*outcome);
  } else {
    return Unwrap(*std::move(outcome));
  }
}

// Runs `call` without the GIL and converts its answer (or raises).
template <typename Fn>
nb::object CallReleased(Fn&& call) {
  return ToPython(Released(std::forward<Fn>(call)));
}

LogSink ToLogSink(const nb::object& callback) {
  if (callback.is_none()) return nullptr;
  std::shared_ptr<nb::object> target = GilShared(callback);
  return [target](std::string_view line) {
    nb::gil_scoped_acquire gil;
    try {
      (*target)(nb::str(line.data(), line.size()));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("tesscpp stream_logs callback");
    }
  };
}

std::vector<std::pair<std::string, std::string>> ToSettings(const nb::dict& settings) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [key, item] : settings) {
    // As tesseract-core's runtime_config_to_env: booleans are 1 and 0.
    const std::string value = nb::isinstance<nb::bool_>(item) ? (nb::cast<bool>(item) ? "1" : "0")
                                                              : nb::cast<std::string>(nb::str(item));
    out.emplace_back(nb::cast<std::string>(nb::str(key)), value);
  }
  return out;
}

nb::object OptionalList(const std::optional<std::vector<std::string>>& list) {
  if (!list) return nb::none();
  return nb::tuple(nb::cast(*list));
}

using Name = std::optional<std::string>;

// What from_source and from_image share (ServeOptions), as the Python layer
// passes it.
void SetServeOptions(ServeOptions& options, const std::string& input_path, const std::string& output_path,
                     const std::string& output_format, Name gpu_transport, const nb::dict& runtime_config,
                     double startup_timeout, double connect_timeout, double read_timeout, bool binref_pool,
                     const nb::object& stream_logs, const std::string& token) {
  options.input_path = input_path;
  options.output_path = output_path;
  options.output_format = output_format;
  options.gpu_transport = std::move(gpu_transport);
  options.runtime_config = ToSettings(runtime_config);
  options.startup_timeout_s = startup_timeout;
  options.client.connect_timeout_s = connect_timeout;
  options.client.read_timeout_s = read_timeout;
  options.client.binref_pool = binref_pool;
  options.client.cuda_ipc_events = true;  // as from_url
  options.client.stream_logs = ToLogSink(stream_logs);
  options.client.token = token;
}

}  // namespace
}  // namespace tesscpp::internal

NB_MODULE(_tesscpp, m) {  // NOLINT(performance-unnecessary-value-param): the macro takes the module by value
  using namespace tesscpp;            // NOLINT(google-build-using-namespace)
  using namespace tesscpp::internal;  // NOLINT(google-build-using-namespace)
  m.doc() = "tesscpp's C++ client, bound with nanobind (use the tesscpp package, not this module).";
  // Handles are routinely still referenced at exit (by autograd graphs, module
  // globals); nanobind's leak report would then be noise, not a finding.
  nb::set_leak_warnings(false);

  ValidationFailureType() =
      nb::borrow(PyErr_NewException("tesscpp._tesscpp.ValidationFailure", PyExc_ValueError, nullptr));
  m.attr("ValidationFailure") = ValidationFailureType();

  nb::class_<DeviceArray>(m, "DeviceArray",
                          "A CUDA array a Tesseract returned, owned by tesscpp. torch.from_dlpack, "
                          "cupy.asarray and jax.dlpack.from_dlpack adopt it without a copy.")
      .def(
          "__dlpack__",
          [](const DeviceArray& a, const nb::object& /*stream*/, const nb::object& max_version,
             const nb::object& dl_device, const nb::object& copy) {
            // Whatever the consumer's stream, the bytes are already complete.
            if (!copy.is_none() && nb::cast<bool>(copy)) {
              throw nb::buffer_error("tesscpp.DeviceArray.__dlpack__: copy=True is not supported");
            }
            if (!dl_device.is_none()) {
              auto wanted = nb::cast<std::pair<int, int>>(dl_device);
              if (wanted.first != static_cast<int>(DeviceType::kCUDA) ||
                  wanted.second != a.tensor.device().id) {
                throw nb::buffer_error("tesscpp.DeviceArray.__dlpack__: the array cannot move to dl_device");
              }
            }
            return DlpackCapsule(a.tensor, max_version);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack_device__",
           [](const DeviceArray& a) {
             return std::make_pair(static_cast<int>(DeviceType::kCUDA), a.tensor.device().id);
           })
      .def_prop_ro("__cuda_array_interface__",
                   [](const DeviceArray& a) {
                     nb::dict cai;
                     cai["shape"] = ShapeTuple(a.tensor);
                     cai["typestr"] = Typestr(a.tensor.dtype());
                     const auto pointer =
                         a.tensor.nbytes() == 0 ? 0 : reinterpret_cast<uintptr_t>(a.tensor.data());
                     cai["data"] = nb::make_tuple(pointer, false);
                     cai["strides"] = nb::none();
                     cai["version"] = 3;
                     return cai;
                   })
      .def_prop_ro("shape", [](const DeviceArray& a) { return ShapeTuple(a.tensor); })
      .def_prop_ro("dtype", [](const DeviceArray& a) { return std::string(DtypeName(a.tensor.dtype())); })
      .def_prop_ro("device", [](const DeviceArray& a) { return a.tensor.device().id; })
      .def(
          "copy_to_host",
          [](const DeviceArray& a) {
            return ExportArray(Released([&] { return cuda::CopyToHost(a.tensor); }));
          },
          "A NumPy copy of the array.")
      .def(
          "__array__",
          [](const DeviceArray& a, const nb::object& dtype, const nb::object& /*copy*/) {
            // Always a copy (the bytes are on the device), and an implicit one.
            nb::object array = ExportArray(Released([&] { return cuda::ImplicitCopyToHost(a.tensor); }));
            return dtype.is_none() ? array : array.attr("astype")(dtype);
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__repr__", [](const DeviceArray& a) {
        return "tesscpp.DeviceArray(shape=" + a.tensor.shape().ToString() +
               ", dtype=" + std::string(DtypeName(a.tensor.dtype())) +
               ", device=cuda:" + std::to_string(a.tensor.device().id) + ")";
      });

  nb::class_<cuda::TransferDone>(m, "_TransferDone").def("wait", [](cuda::TransferDone& done) {
    Released([&] { return done.Wait(); });
  });
  m.def(
      "_copy_h2d",
      [](const std::vector<std::tuple<uintptr_t, uintptr_t, int64_t, bool>>& copies, int device,
         uintptr_t consumer_stream) {
        std::vector<cuda::HostToDeviceCopy> planned;
        planned.reserve(copies.size());
        for (const auto& [source, destination, nbytes, pinned] : copies) {
          planned.push_back(
              {reinterpret_cast<const void*>(source), reinterpret_cast<void*>(destination), nbytes, pinned});
        }
        return Released([&] { return cuda::CopyHostToDevice(planned, device, consumer_stream); });
      },
      nb::arg("copies"), nb::arg("device"), nb::arg("consumer_stream"),
      "Copies (source, destination, nbytes, source_pinned) host ranges to `device` (see tesscpp.cuda).");

  nb::class_<Tesseract>(m, "_Tesseract")
      .def_static(
          "from_url",
          [](const std::string& url, double connect_timeout, double read_timeout,
             const std::string& server_output_path, const std::string& server_input_path, bool binref_pool,
             Name output_format, Name gpu_transport, Name compression, const nb::object& stream_logs,
             int connection_pool_size, const std::string& token) {
            ClientOptions options;
            options.connection_pool_size = connection_pool_size;
            options.token = token;
            options.connect_timeout_s = connect_timeout;
            options.read_timeout_s = read_timeout;
            options.server_output_path = server_output_path;
            options.server_input_path = server_input_path;
            options.binref_pool = binref_pool;
            options.cuda_ipc_events = true;  // CUDA inputs are ordered on the legacy stream (CastArray)
            options.encoding = {std::move(output_format), std::move(gpu_transport), std::move(compression)};
            options.stream_logs = ToLogSink(stream_logs);
            return Unwrap(Tesseract::FromUrl(url, std::move(options)));
          },
          nb::arg("url"), nb::arg("connect_timeout"), nb::arg("read_timeout"), nb::arg("server_output_path"),
          nb::arg("server_input_path"), nb::arg("binref_pool"), nb::arg("output_format").none(),
          nb::arg("gpu_transport").none(), nb::arg("compression").none(), nb::arg("stream_logs").none(),
          nb::arg("connection_pool_size"), nb::arg("token"))
      .def_static(
          "from_source",
          [](const std::string& path, const std::string& input_path, const std::string& output_path,
             const std::string& output_format, Name gpu_transport, const nb::dict& runtime_config,
             const std::string& python_executable, const std::string& tesscpp_executable,
             double startup_timeout, double connect_timeout, double read_timeout, bool binref_pool,
             const nb::object& stream_logs, const std::string& token) {
            SourceOptions options;
            SetServeOptions(options, input_path, output_path, output_format, std::move(gpu_transport),
                            runtime_config, startup_timeout, connect_timeout, read_timeout, binref_pool,
                            stream_logs, token);
            options.python_executable = python_executable;
            options.tesscpp_executable = tesscpp_executable;
            return Released([&] { return Tesseract::FromSource(path, options); });
          },
          nb::arg("path"), nb::arg("input_path"), nb::arg("output_path"), nb::arg("output_format"),
          nb::arg("gpu_transport").none(), nb::arg("runtime_config"), nb::arg("python_executable"),
          nb::arg("tesscpp_executable"), nb::arg("startup_timeout"), nb::arg("connect_timeout"),
          nb::arg("read_timeout"), nb::arg("binref_pool"), nb::arg("stream_logs").none(), nb::arg("token"))
      .def_static(
          "from_image",
          [](const std::string& image, const std::string& host_ip, const std::string& port,
             const std::string& network, const std::string& network_alias, std::vector<std::string> volumes,
             const nb::dict& environment, std::vector<std::string> gpus, int num_workers,
             const std::string& user, const std::string& memory, const std::string& input_path,
             const std::string& output_path, const std::string& output_format, Name gpu_transport,
             std::vector<std::string> docker_args, const nb::dict& runtime_config, bool skip_health_check,
             double startup_timeout, double connect_timeout, double read_timeout, bool binref_pool,
             const nb::object& stream_logs, const std::string& token) {
            ImageOptions options;
            options.host_ip = host_ip;
            options.port = port;
            options.network = network;
            options.network_alias = network_alias;
            options.volumes = std::move(volumes);
            for (auto [key, item] : environment)
              options.environment.emplace_back(nb::cast<std::string>(nb::str(key)),
                                               nb::cast<std::string>(nb::str(item)));
            options.gpus = std::move(gpus);
            options.num_workers = num_workers;
            options.user = user;
            options.memory = memory;
            SetServeOptions(options, input_path, output_path, output_format, std::move(gpu_transport),
                            runtime_config, startup_timeout, connect_timeout, read_timeout, binref_pool,
                            stream_logs, token);
            options.docker_args = std::move(docker_args);
            options.skip_health_check = skip_health_check;
            return Released([&] { return Tesseract::FromImage(image, options); });
          },
          nb::arg("image"), nb::arg("host_ip"), nb::arg("port"), nb::arg("network"), nb::arg("network_alias"),
          nb::arg("volumes"), nb::arg("environment"), nb::arg("gpus"), nb::arg("num_workers"),
          nb::arg("user"), nb::arg("memory"), nb::arg("input_path"), nb::arg("output_path"),
          nb::arg("output_format"), nb::arg("gpu_transport").none(), nb::arg("docker_args"),
          nb::arg("runtime_config"), nb::arg("skip_health_check"), nb::arg("startup_timeout"),
          nb::arg("connect_timeout"), nb::arg("read_timeout"), nb::arg("binref_pool"),
          nb::arg("stream_logs").none(), nb::arg("token"))
      .def_static(
          "from_library",
          [](const std::string& path, const std::string& output_path, Name gpu_transport,
             const nb::dict& runtime_config, const nb::object& stream_logs) {
            LibraryOptions options;
            options.output_path = output_path;
            options.gpu_transport = std::move(gpu_transport);
            options.runtime_config = ToSettings(runtime_config);
            options.stream_logs = ToLogSink(stream_logs);
            return Unwrap(Tesseract::FromLibrary(path, options));
          },
          nb::arg("path"), nb::arg("output_path"), nb::arg("gpu_transport").none(), nb::arg("runtime_config"),
          nb::arg("stream_logs").none())
      .def(
          "apply",
          [](const Tesseract& t, const nb::handle& inputs, const Name& run_id) {
            const Value payload = ToValue(inputs);
            return CallReleased([&] { return t.Apply(payload, run_id); });
          },
          nb::arg("inputs"), nb::arg("run_id").none())
      .def("abstract_eval",
           [](const Tesseract& t, const nb::handle& inputs) {
             const Value payload = ToValue(inputs);
             return CallReleased([&] { return t.AbstractEval(payload); });
           })
      .def("health", [](const Tesseract& t) { return CallReleased([&] { return t.Health(); }); })
      .def(
          "jacobian",
          [](const Tesseract& t, const nb::handle& inputs, const std::vector<std::string>& jac_inputs,
             const std::vector<std::string>& jac_outputs, const Name& run_id) {
            const Value payload = ToValue(inputs);
            return CallReleased([&] { return t.Jacobian(payload, jac_inputs, jac_outputs, run_id); });
          },
          nb::arg("inputs"), nb::arg("jac_inputs"), nb::arg("jac_outputs"), nb::arg("run_id").none())
      .def(
          "jacobian_vector_product",
          [](const Tesseract& t, const nb::handle& inputs, const std::vector<std::string>& jvp_inputs,
             const std::vector<std::string>& jvp_outputs, const nb::handle& tangent_vector,
             const Name& run_id) {
            const Value payload = ToValue(inputs);
            const Value tangent = ToValue(tangent_vector);
            return CallReleased(
                [&] { return t.JacobianVectorProduct(payload, jvp_inputs, jvp_outputs, tangent, run_id); });
          },
          nb::arg("inputs"), nb::arg("jvp_inputs"), nb::arg("jvp_outputs"), nb::arg("tangent_vector"),
          nb::arg("run_id").none())
      .def(
          "vector_jacobian_product",
          [](const Tesseract& t, const nb::handle& inputs, const std::vector<std::string>& vjp_inputs,
             const std::vector<std::string>& vjp_outputs, const nb::handle& cotangent_vector,
             const Name& run_id) {
            const Value payload = ToValue(inputs);
            const Value cotangent = ToValue(cotangent_vector);
            return CallReleased(
                [&] { return t.VectorJacobianProduct(payload, vjp_inputs, vjp_outputs, cotangent, run_id); });
          },
          nb::arg("inputs"), nb::arg("vjp_inputs"), nb::arg("vjp_outputs"), nb::arg("cotangent_vector"),
          nb::arg("run_id").none())
      .def("test",
           [](const Tesseract& t, const nb::handle& test_spec) {
             const Value spec = ToValue(test_spec);
             const TestOutcome done = Released([&] { return t.Test(spec); });
             return std::make_pair(done.status, done.message);
           })
      .def("openapi_schema",
           [](const Tesseract& t) { return CallReleased([&] { return t.OpenApiSchema(); }); })
      .def("available_endpoints",
           [](const Tesseract& t) { return Released([&] { return t.AvailableEndpoints(); }); })
      .def("capabilities",
           [](const Tesseract& t) -> nb::object {
             const std::optional<ServerCapabilities> advertised = Released([&] { return t.Capabilities(); });
             if (!advertised) return nb::none();
             return nb::make_tuple(OptionalList(advertised->output_formats),
                                   OptionalList(advertised->gpu_transports),
                                   OptionalList(advertised->compressions));
           })
      .def(
          "with_encoding",
          [](const Tesseract& t, Name output_format, Name gpu_transport, Name compression) {
            const RequestedEncoding requested{std::move(output_format), std::move(gpu_transport),
                                              std::move(compression)};
            return Released([&] { return t.WithEncoding(requested); });
          },
          nb::arg("output_format").none(), nb::arg("gpu_transport").none(), nb::arg("compression").none())
      .def("current_encoding",
           [](const Tesseract& t) {
             const RequestedEncoding& e = t.current_encoding();
             return std::make_tuple(e.output_format, e.gpu_transport, e.compression);
           })
      .def("resolve_gpu_transport",
           [](const Tesseract& t) {
             const GpuTransportChoice done = Released([&] { return t.ResolveGpuTransport(); });
             return std::make_pair(done.transport, done.fallback_reason);
           })
      .def("teardown", [](Tesseract& t) { Released([&] { return t.Teardown(); }); })
      .def("server_logs", [](const Tesseract& t) { return Unwrap(t.ServerLogs()); })
      .def("container_info",
           [](const Tesseract& t) {
             ContainerInfo info = Released([&] { return t.GetContainerInfo(); });
             nb::dict out;
             out["id"] = info.id;
             out["name"] = info.name;
             out["image"] = info.image;
             out["status"] = info.status;
             out["host_ip"] = info.host_ip;
             out["host_port"] = info.host_port;
             out["url"] = info.url;
             out["attrs"] = ToPython(info.attrs);
             return out;
           })
      .def_prop_ro("url", &Tesseract::url);
}
