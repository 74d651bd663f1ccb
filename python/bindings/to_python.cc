#include "to_python.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "device_array.h"
#include "gil_calls.h"

namespace tesscpp::bindings {

namespace nb = nanobind;

nb::object ExportArray(const Tensor& tensor, DeviceBytes device_bytes) {
  if (tensor.device().type == DeviceType::kCUDA) {
    return nb::cast(DeviceArray{tensor, device_bytes == DeviceBytes::kOnLegacyStream});
  }
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

nb::object ToPython(const Value& value, DeviceBytes device_bytes) {
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
      for (const Value& item : value.as_list()) list.append(ToPython(item, device_bytes));
      return list;
    }
    case Value::Kind::kDict: {
      nb::dict dict;
      for (const auto& [key, item] : value.as_dict())
        dict[nb::str(key.c_str(), key.size())] = ToPython(item, device_bytes);
      return dict;
    }
    case Value::Kind::kTensor: return ExportArray(value.as_tensor(), device_bytes);
  }
  return nb::none();
}

}  // namespace tesscpp::bindings
