// array_cuda_ipc.cc: format and strict parse of cuda_ipc buffer strings.
#include "codec/array_cuda_ipc.h"

#include <charconv>
#include <vector>

#include "codec/base64.h"

namespace tesscpp::codec {
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

}  // namespace

std::vector<std::string_view> SplitFields(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t at = text.find(separator, start);
    fields.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return fields;
    start = at + 1;
  }
}

Status CheckDeviceUuid(std::string_view text) {
  if (IsCanonicalUuid(text)) return Status::OK();
  return Status::ValidationError("the device must be a lowercase 8-4-4-4-12 UUID, got '", text, "'");
}

Status DecodeIpcHandle(std::string_view text, std::array<uint8_t, cuda::IpcDescriptor::kHandleSize>& handle) {
  auto size = Base64DecodedSize(text);
  if (!size.ok() || *size != handle.size()) {
    return Status::ValidationError("the handle must be the base64 of ", handle.size(), " bytes");
  }
  const Status decoded = Base64Decode(text, handle);
  if (!decoded.ok()) return Status::ValidationError("the handle is not valid base64: ", decoded.message());
  return Status::OK();
}

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor) {
  const std::string handle = descriptor.has_handle ? Base64String(descriptor.handle) : std::string();
  return descriptor.device_uuid + ":" + handle + ":" + std::to_string(descriptor.offset) + ":" +
         std::to_string(descriptor.allocation_size);
}

Result<cuda::IpcDescriptor> ParseCudaIpcBuffer(std::string_view text) {
  const std::vector<std::string_view> fields = SplitFields(text, ':');
  if (fields.size() != 4) {
    return Status::ValidationError("a cuda_ipc buffer is '<device uuid>:<handle>:<offset>:<size>', got ",
                                   fields.size(), " ':'-separated fields");
  }
  TESS_RETURN_IF_ERROR(CheckDeviceUuid(fields[0]));
  cuda::IpcDescriptor descriptor;
  descriptor.device_uuid = std::string(fields[0]);
  TESS_ASSIGN_OR_RETURN(descriptor.offset, Decimal(fields[2], "the offset"));
  TESS_ASSIGN_OR_RETURN(descriptor.allocation_size, Decimal(fields[3], "the allocation size"));
  if (fields[1].empty()) return descriptor;
  TESS_RETURN_IF_ERROR(DecodeIpcHandle(fields[1], descriptor.handle));
  descriptor.has_handle = true;
  return descriptor;
}

}  // namespace tesscpp::codec
