// value_copies.cc: Value trees with their CUDA tensors copied to the host (in
// builds with and without CUDA: a tree without CUDA tensors needs no device).
#include "tesscpp/cuda.h"

namespace tesscpp::cuda {

Result<Value> DeviceTensorsToHost(const Value& value) {
  if (value.is_tensor()) {
    if (value.as_tensor().device().host_accessible()) return value;
    TESS_ASSIGN_OR_RETURN(Tensor host, CopyToHost(value.as_tensor()));
    return Value(std::move(host));
  }
  if (value.is_list()) {
    Value::List list;
    for (const Value& item : value.as_list()) {
      TESS_ASSIGN_OR_RETURN(Value converted, DeviceTensorsToHost(item));
      list.push_back(std::move(converted));
    }
    return Value(std::move(list));
  }
  if (value.is_dict()) {
    Value::Dict dict;
    for (const auto& [key, item] : value.as_dict()) {
      TESS_ASSIGN_OR_RETURN(Value converted, DeviceTensorsToHost(item));
      dict.set(key, std::move(converted));
    }
    return Value(std::move(dict));
  }
  return value;
}

}  // namespace tesscpp::cuda
