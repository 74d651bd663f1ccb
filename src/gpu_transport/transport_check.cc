// transport_check.cc: the server's side of POST /check_gpu_transport.
#include "gpu_transport/transport_check.h"

#include <algorithm>
#include <vector>

#include "codec/array_cuda_ipc.h"
#include "codec/base64.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/cuda_ipc.h"
#include "tesscpp/internal/json.h"
#include "tesscpp/internal/python_exception.h"

namespace tesscpp::gpu_transport {

namespace {

constexpr int64_t kCheckBytes = 256;

// Python's repr of the requested transport, for the refusal text.
std::string Repr(const Value* value) {
  if (value == nullptr || value->is_null()) return "None";
  if (value->is_string()) return "'" + value->as_string() + "'";
  auto text = WriteJson(*value);
  return text.ok() ? std::string(text->string_view()) : "?";
}

// check.py's _read: the client's array, checked, through the transport, to host.
Result<Tensor> ReadCheckArray(const Value* payload, const std::string& transport) {
  const Value* dtype = payload != nullptr && payload->is_dict() ? payload->as_dict().find("dtype") : nullptr;
  if (dtype == nullptr || !dtype->is_string() || dtype->as_string() != "uint8") {
    return Status::InvalidArgument("expected a uint8 array");
  }
  const Value* shape = payload->as_dict().find("shape");
  if (shape == nullptr || !shape->is_list() || shape->as_list().size() != 1 ||
      !shape->as_list()[0].is_int() || shape->as_list()[0].as_int() != kCheckBytes) {
    return Status::InvalidArgument("expected an array of ", kCheckBytes, " bytes");
  }
  const Value* data = payload->as_dict().find("data");
  const Value* encoding = data != nullptr && data->is_dict() ? data->as_dict().find("encoding") : nullptr;
  if (encoding == nullptr || !encoding->is_string() || encoding->as_string() != transport) {
    return Status::InvalidArgument("expected a ", transport, " array");
  }
  const Value* buffer = data->as_dict().find("buffer");
  if (buffer == nullptr || !buffer->is_string()) return Status::InvalidArgument("expected a string buffer");
  TESS_ASSIGN_OR_RETURN(cuda::IpcDescriptor descriptor, codec::ParseCudaIpcBuffer(buffer->as_string()));
  TESS_ASSIGN_OR_RETURN(Shape check_shape, Shape::Make({kCheckBytes}));
  TESS_ASSIGN_OR_RETURN(Tensor device, cuda::ImportIpc(descriptor, Dtype::kUInt8, check_shape));
  return device;
}

Result<Tensor> ReversedOnDevice(const Value& request, const std::string& transport) {
  TESS_ASSIGN_OR_RETURN(Tensor device, ReadCheckArray(request.as_dict().find("array"), transport));
  TESS_ASSIGN_OR_RETURN(Tensor host, device.ViewOrCopyToHost());
  const Value* expected = request.as_dict().find("expected");
  const std::string expected_text = expected != nullptr && expected->is_string() ? expected->as_string() : "";
  std::vector<uint8_t> wanted(kCheckBytes);
  auto size = codec::Base64DecodedSize(expected_text);
  if (!size.ok() || *size != wanted.size() || !codec::Base64Decode(expected_text, wanted).ok() ||
      !std::equal(wanted.begin(), wanted.end(), host.data())) {
    return Status::InvalidArgument("the bytes read from the client's array differ from the ones it wrote");
  }
  std::reverse(host.data(), host.data() + kCheckBytes);
  return cuda::CopyToDevice(host, device.device().id);
}

}  // namespace

Value AnswerTransportCheck(const Value& request, const std::string& enabled_transport) {
  const Value* requested = request.as_dict().find("gpu_transport");
  if (requested == nullptr || !requested->is_string() || requested->as_string() == "none" ||
      requested->as_string() != enabled_transport) {
    return Value::Dict{{"ok", false},
                       {"reason", "gpu_transport=" + Repr(requested) +
                                      " is not enabled on this Tesseract (available: ['none', '" +
                                      enabled_transport + "'])"}};
  }
  auto reversed = ReversedOnDevice(request, enabled_transport);
  if (!reversed.ok()) {
    return Value::Dict{
        {"ok", false},
        {"reason", std::string("the Tesseract could not exchange GPU memory with the client: ") +
                       TransportCheckExceptionName(reversed.status()) + ": " + reversed.status().message()}};
  }
  return Value::Dict{{"ok", true}, {"array", Value(*std::move(reversed))}};
}

const char* TransportCheckExceptionName(const Status& status) {
  return core::PythonExceptionName(status.code(), core::PythonContext::kTransportCheck);
}

}  // namespace tesscpp::gpu_transport
