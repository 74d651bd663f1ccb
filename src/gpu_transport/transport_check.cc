// transport_check.cc: POST /check_gpu_transport for cuda_ipc, both sides.
#include "gpu_transport/transport_check.h"

#include <algorithm>
#include <random>
#include <vector>

#include "codec/base64.h"
#include "gpu_transport/cuda_ipc_buffer.h"
#include "gpu_transport/ipc_arrays.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/python_exception.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"

namespace tesscpp::gpu_transport {

namespace {

constexpr int64_t kCheckBytes = 256;

// The Python exception tesseract-core names in a check's reason for a failure
// like `status` ("ValueError" for bad input, else "RuntimeError"), so reasons
// read the same from either implementation.
const char* TransportCheckExceptionName(const Status& status) {
  return core::PythonExceptionName(status.code(), core::PythonContext::kTransportCheck);
}

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
  TESS_ASSIGN_OR_RETURN(cuda::IpcDescriptor descriptor, ParseCudaIpcBuffer(buffer->as_string()));
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

namespace {

CheckOutcome Failed(std::string_view what, const Status& status) {
  return {false,
          std::string(what) + " (" + TransportCheckExceptionName(status) + ": " + status.message() + ")"};
}

// The check request: `sent` on the current device, exported into `exports`.
Result<Buffer> ExportedRequest(const Tensor& sent, IpcArrays& exports) {
  TESS_ASSIGN_OR_RETURN(int ordinal, cuda::CurrentDevice());
  TESS_ASSIGN_OR_RETURN(Tensor device, cuda::CopyToDevice(sent, ordinal));
  JsonWriteOptions write;
  write.arrays.device_arrays = &exports;
  return WriteJson(Value::Dict{{"gpu_transport", kCudaIpcName},
                               {"array", Value(device)},
                               {"expected", Value(codec::Base64String(sent.bytes()))}},
                   write);
}

// The reply's verdict; an error for a body that is no check reply.
Result<CheckOutcome> ReadReply(std::string_view peer, const CheckAnswer& answer, const Tensor& sent) {
  JsonReadOptions read;
  read.arrays = ArrayDetection::kTagged;
  IpcArrays imports = IpcArrays::Copying();
  read.array_options.device_arrays = &imports;
  auto reply = ReadJson(answer.body, read);
  const Value* ok = reply.ok() && reply->is_dict() ? reply->as_dict().find("ok") : nullptr;
  if (ok == nullptr || !ok->is_bool()) {
    return Status::DecodeError(
        peer, " answered the check of gpu_transport='cuda_ipc' with something else than a ",
        "check reply: ", reply.ok() ? answer.body.string_view() : reply.status().message());
  }
  if (!ok->as_bool()) {
    const Value* reason = reply->as_dict().find("reason");
    return CheckOutcome{false, reason != nullptr && reason->is_string() && !reason->as_string().empty()
                                   ? reason->as_string()
                                   : "no reason given"};
  }
  const Value* array = reply->as_dict().find("array");
  auto host = array != nullptr && array->is_tensor()
                  ? array->as_tensor().ViewOrCopyToHost()
                  : Result<Tensor>(Status::InvalidArgument("expected a uint8 array"));
  if (host.ok() && (host->dtype() != Dtype::kUInt8 || host->nbytes() != kCheckBytes)) {
    host = Status::InvalidArgument("expected an array of ", kCheckBytes, " bytes");
  }
  if (host.ok() && !std::equal(host->bytes().begin(), host->bytes().end(), sent.bytes().rbegin())) {
    host = Status::InvalidArgument("the bytes read from the Tesseract's array differ from the ones it wrote");
  }
  if (!host.ok())
    return Failed("this process could not read GPU memory exported by the Tesseract", host.status());
  return CheckOutcome{true, ""};
}

}  // namespace

Result<CheckOutcome> CheckFromClient(std::string_view peer, const CheckPost& post,
                                     const std::function<void(const HeaderLookup&)>& acknowledge) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make({kCheckBytes}));
  TESS_ASSIGN_OR_RETURN(const Tensor sent, Tensor::Allocate(Dtype::kUInt8, shape));
  std::random_device random;
  for (uint8_t& byte : sent.bytes()) byte = static_cast<uint8_t>(random());
  IpcArrays exports = IpcArrays::Exporting();
  Result<Buffer> request = ExportedRequest(sent, exports);
  if (!request.ok()) return Failed("this process could not export GPU memory", request.status());
  TESS_ASSIGN_OR_RETURN(CheckAnswer answer, post(*request));
  acknowledge(answer.header);
  exports.pins().clear();  // the server has read our bytes (or failed to)
  if (answer.status < 200 || answer.status >= 300) {
    return Status::Unavailable(peer, " answered the check of gpu_transport='cuda_ipc' with error ",
                               answer.status, ": ", answer.body.string_view());
  }
  return ReadReply(peer, answer, sent);
}

}  // namespace tesscpp::gpu_transport
