// kept_inputs.cc: forward reuse's keys, and the device copies kept applies run on.
#include "runtime/kept_inputs.h"

#include <bit>
#include <cstring>
#include <utility>

#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/device_values.h"

namespace tesscpp::runtime {
namespace {

// `value` with `copy` applied to every tensor in it, the rest of the tree
// rebuilt as it is.
template <typename Copy>
Result<Value> WithTensorsCopied(const Value& value, const Copy& copy) {
  switch (value.kind()) {
    case Value::Kind::kTensor: {
      TESS_ASSIGN_OR_RETURN(Tensor copied, copy(value.as_tensor()));
      return Value(std::move(copied));
    }
    case Value::Kind::kList: {
      Value::List list;
      list.reserve(value.as_list().size());
      for (const Value& item : value.as_list()) {
        TESS_ASSIGN_OR_RETURN(Value copied, WithTensorsCopied(item, copy));
        list.push_back(std::move(copied));
      }
      return Value(std::move(list));
    }
    case Value::Kind::kDict: {
      Value::Dict dict;
      for (const auto& [key, item] : value.as_dict()) {
        TESS_ASSIGN_OR_RETURN(Value copied, WithTensorsCopied(item, copy));
        dict.set(key, std::move(copied));
      }
      return Value(std::move(dict));
    }
    case Value::Kind::kNull:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kString: break;
  }
  return value;
}

Result<Tensor> HostCopy(const Tensor& tensor) {
  TESS_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(tensor.dtype(), tensor.shape()));
  if (tensor.nbytes() == 0) return copy;
  if (tensor.device().host_accessible()) {
    std::memcpy(copy.data(), tensor.data(), static_cast<size_t>(tensor.nbytes()));
    return copy;
  }
  if (core::ImplicitHostCopiesForbidden()) {
    return Status::NotAcceptable(
        "device inputs are not copied to the host for forward reuse "
        "(TESSERACT_FORBID_DEVICE_HOST_COPY is set)");
  }
  if (tensor.device().type != DeviceType::kCUDA) return tensor.ViewOrCopyToHost();
  TESS_RETURN_IF_ERROR(
      cuda::CopyToHostAfterStream(copy.data(), tensor.data(), tensor.nbytes(), tensor.device().id, 1));
  return copy;
}

}  // namespace

bool SameInputs(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kFloat:
      return std::bit_cast<uint64_t>(a.as_number()) == std::bit_cast<uint64_t>(b.as_number());
    case Value::Kind::kList: {
      const Value::List& x = a.as_list();
      const Value::List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!SameInputs(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Value::Dict& x = a.as_dict();
      const Value::Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
        if (i->first != j->first || !SameInputs(i->second, j->second)) return false;
      }
      return true;
    }
    case Value::Kind::kNull:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kString:
    case Value::Kind::kTensor: break;  // tensors: dtype, shape, device and bytes
  }
  return a == b;
}

Result<Value> DetachedCopy(const Value& inputs) { return WithTensorsCopied(inputs, HostCopy); }

Result<Value> KeyOf(const Value& device_inputs) {
  TESS_ASSIGN_OR_RETURN(Value host, DetachedCopy(device_inputs));
  Value::List devices;
  for (int ordinal : core::DevicesOf(device_inputs)) devices.push_back(Value(int64_t{ordinal}));
  return Value(Value::Dict{{"devices", Value(std::move(devices))}, {"inputs", std::move(host)}});
}

Result<Value> OwnDeviceCopy(const Value& inputs) {
  auto copy_one = [](const Tensor& tensor) -> Result<Tensor> {
    if (tensor.device().type != DeviceType::kCUDA) return tensor;
    TESS_ASSIGN_OR_RETURN(Tensor copy,
                          cuda::AllocateDevice(tensor.dtype(), tensor.shape(), tensor.device().id));
    TESS_RETURN_IF_ERROR(
        cuda::CopyOnDeviceAsync(copy.data(), tensor.data(), tensor.nbytes(), tensor.device().id, 1));
    return copy;
  };
  TESS_ASSIGN_OR_RETURN(Value owned, WithTensorsCopied(inputs, copy_one));
  // Waited for, so that no early answer (a 422, a 406) leaves a read of the
  // client's memory queued behind it: only the copies' stream, per device.
  for (int ordinal : core::DevicesOf(inputs)) {
    TESS_ASSIGN_OR_RETURN(cuda::StreamMark copied, cuda::StreamMark::OnLegacyStream(ordinal));
    TESS_RETURN_IF_ERROR(copied.Wait());
  }
  return owned;
}

}  // namespace tesscpp::runtime
