// value_copies.cc: implicit host copies of CUDA tensors and Value trees (in
// builds with and without CUDA: a tree without CUDA tensors needs no device).
#include <cctype>
#include <cstdlib>
#include <string>

#include "tesscpp/cuda.h"

namespace tesscpp::cuda {

Result<Tensor> ImplicitCopyToHost(const Tensor& tensor) {
  if (tensor.device().host_accessible()) return tensor;
  const char* forbid = std::getenv("TESSERACT_FORBID_DEVICE_HOST_COPY");
  std::string value = forbid != nullptr ? forbid : "";
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "1" || value == "true") {
    return Status::NotAcceptable("Implicit device-to-host copy of a ", tensor.device().ToString(),
                                   " tensor (TESSERACT_FORBID_DEVICE_HOST_COPY is set).");
  }
  return CopyToHost(tensor);
}

Result<Value> DeviceTensorsToHost(const Value& value) {
  if (value.is_tensor()) {
    if (value.as_tensor().device().host_accessible()) return value;
    TESS_ASSIGN_OR_RETURN(Tensor host, ImplicitCopyToHost(value.as_tensor()));
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
