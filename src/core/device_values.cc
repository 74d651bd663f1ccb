// device_values.cc: device tensors inside Value trees, and their implicit host
// copies (made by the memory holding them: the core names no device API).
#include "tesscpp/internal/core/device_values.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace tesscpp::core {

bool ImplicitHostCopiesForbidden() {
  const char* forbid = std::getenv("TESSERACT_FORBID_DEVICE_HOST_COPY");
  std::string value = forbid != nullptr ? forbid : "";
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value == "1" || value == "true";
}

Result<Tensor> ImplicitCopyToHost(const Tensor& tensor) {
  if (tensor.device().host_accessible()) return tensor;
  if (ImplicitHostCopiesForbidden()) {
    return Status::NotAcceptable("Implicit device-to-host copy of a ", tensor.device().ToString(),
                                 " tensor (TESSERACT_FORBID_DEVICE_HOST_COPY is set).");
  }
  return tensor.ViewOrCopyToHost();
}

namespace {

// Whether `stop` returns true for a tensor anywhere in `value` (depth first,
// stopping at the first).
template <typename Stop>
bool AnyTensor(const Value& value, const Stop& stop) {
  if (value.is_tensor()) return stop(value.as_tensor());
  if (value.is_list()) {
    const Value::List& list = value.as_list();
    return std::any_of(list.begin(), list.end(), [&](const Value& item) { return AnyTensor(item, stop); });
  }
  if (value.is_dict()) {
    const Value::Dict& dict = value.as_dict();
    return std::any_of(dict.begin(), dict.end(),
                       [&](const auto& item) { return AnyTensor(item.second, stop); });
  }
  return false;
}

}  // namespace

bool HoldsDeviceTensors(const Value& value) {
  return AnyTensor(value, [](const Tensor& tensor) { return !tensor.device().host_accessible(); });
}

std::vector<int> DevicesOf(const Value& value) {
  std::set<int> ordinals;
  AnyTensor(value, [&](const Tensor& tensor) {
    if (tensor.device().type == DeviceType::kCUDA && tensor.nbytes() > 0) ordinals.insert(tensor.device().id);
    return false;
  });
  return {ordinals.begin(), ordinals.end()};
}

Status MoveDeviceTensorsToHost(Value& value) {
  if (value.is_tensor() && !value.as_tensor().device().host_accessible()) {
    TESS_ASSIGN_OR_RETURN(Tensor host, ImplicitCopyToHost(value.as_tensor()));
    value = Value(std::move(host));
  } else if (value.is_list()) {
    for (Value& item : value.as_list()) TESS_RETURN_IF_ERROR(MoveDeviceTensorsToHost(item));
  } else if (value.is_dict()) {
    for (auto& [key, item] : value.as_dict()) TESS_RETURN_IF_ERROR(MoveDeviceTensorsToHost(item));
  }
  return Status::OK();
}

}  // namespace tesscpp::core
