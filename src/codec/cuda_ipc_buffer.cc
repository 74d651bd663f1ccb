// cuda_ipc_buffer.cc: format and strict parse of cuda_ipc buffer strings.
#include "codec/cuda_ipc_buffer.h"

#include <charconv>
#include <vector>

#include "codec/base64.h"

namespace tesscpp::internal {
namespace {

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool IsCanonicalUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : !IsLowerHex(text[i])) return false;
  }
  return true;
}

Result<int64_t> Decimal(std::string_view text, const char* name) {
  int64_t value = 0;
  const bool digits_only = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!digits_only || error != std::errc() || end != text.data() + text.size()) {
    return Status::ValidationError(name, " must be a non-negative decimal integer below 2**63, got '", text,
                                   "'");
  }
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t at = text.find(separator, start);
    fields.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return fields;
    start = at + 1;
  }
}

Status CheckUuid(std::string_view text) {
  if (IsCanonicalUuid(text)) return Status::OK();
  return Status::ValidationError("the device must be a lowercase 8-4-4-4-12 UUID, got '", text, "'");
}

// A 64-byte CUDA IPC handle (memory or event) from its base64.
Status DecodeHandle(std::string_view text, std::array<uint8_t, cuda::IpcDescriptor::kHandleSize>& handle) {
  auto size = Base64DecodedSize(text);
  if (!size.ok() || *size != handle.size()) {
    return Status::ValidationError("the handle must be the base64 of ", handle.size(), " bytes");
  }
  const Status decoded = Base64Decode(text, handle);
  if (!decoded.ok()) return Status::ValidationError("the handle is not valid base64: ", decoded.message());
  return Status::OK();
}

}  // namespace

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor) {
  const std::string handle = descriptor.has_handle ? Base64String(descriptor.handle) : std::string();
  return descriptor.device_uuid + ":" + handle + ":" + std::to_string(descriptor.offset) + ":" +
         std::to_string(descriptor.allocation_size);
}

Result<cuda::IpcDescriptor> ParseCudaIpcBuffer(std::string_view text) {
  const std::vector<std::string_view> fields = Split(text, ':');
  if (fields.size() != 4) {
    return Status::ValidationError("a cuda_ipc buffer is '<device uuid>:<handle>:<offset>:<size>', got ",
                                   fields.size(), " ':'-separated fields");
  }
  TESS_RETURN_IF_ERROR(CheckUuid(fields[0]));
  cuda::IpcDescriptor descriptor;
  descriptor.device_uuid = std::string(fields[0]);
  TESS_ASSIGN_OR_RETURN(descriptor.offset, Decimal(fields[2], "the offset"));
  TESS_ASSIGN_OR_RETURN(descriptor.allocation_size, Decimal(fields[3], "the allocation size"));
  if (fields[1].empty()) return descriptor;
  TESS_RETURN_IF_ERROR(DecodeHandle(fields[1], descriptor.handle));
  descriptor.has_handle = true;
  return descriptor;
}

std::string FormatIpcEvents(const std::vector<cuda::IpcEvent>& events) {
  std::string text;
  for (const cuda::IpcEvent& event : events) {
    if (!text.empty()) text += ',';
    text += event.device_uuid + ":" + Base64String(event.handle);
  }
  return text;
}

Result<std::vector<cuda::IpcEvent>> ParseIpcEvents(std::string_view text) {
  std::vector<cuda::IpcEvent> events;
  for (std::string_view item : Split(text, ',')) {
    const std::vector<std::string_view> fields = Split(item, ':');
    if (fields.size() != 2) {
      return Status::ValidationError("an IPC event is '<device uuid>:<handle>', got '", item, "'");
    }
    TESS_RETURN_IF_ERROR(CheckUuid(fields[0]));
    cuda::IpcEvent event;
    event.device_uuid = std::string(fields[0]);
    TESS_RETURN_IF_ERROR(DecodeHandle(fields[1], event.handle));
    events.push_back(std::move(event));
  }
  return events;
}

Result<std::string> RecordIpcEvents(const std::vector<int>& devices) {
  std::vector<cuda::IpcEvent> events;
  for (int device : devices) {
    TESS_ASSIGN_OR_RETURN(cuda::IpcEvent event, cuda::RecordIpcEvent(device));
    events.push_back(std::move(event));
  }
  return FormatIpcEvents(events);
}

Status WaitForIpcEvents(std::string_view header, cuda::IpcEventWait how) {
  TESS_ASSIGN_OR_RETURN(std::vector<cuda::IpcEvent> events, ParseIpcEvents(header));
  for (const cuda::IpcEvent& event : events) TESS_RETURN_IF_ERROR(cuda::WaitIpcEvent(event, how));
  return Status::OK();
}

const char* TransportCheckExceptionName(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kValidationError: return "ValueError";
    default: return "RuntimeError";
  }
}

}  // namespace tesscpp::internal
