// cuda_ipc_buffer.cc: format and strict parse of cuda_ipc buffer strings.
#include "gpu_transport/cuda_ipc_buffer.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "codec/base64.h"

namespace tesscpp::gpu_transport {
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
  auto size = codec::Base64DecodedSize(text);
  if (!size.ok() || *size != handle.size()) {
    return Status::ValidationError("the handle must be the base64 of ", handle.size(), " bytes");
  }
  const Status decoded = codec::Base64Decode(text, handle);
  if (!decoded.ok()) return Status::ValidationError("the handle is not valid base64: ", decoded.message());
  return Status::OK();
}

namespace {

constexpr std::string_view kVmmPrefix = "vmm.";
constexpr size_t kMaxVmmPieces = 65536;  // 1.3 TiB in torch's 20 MiB chunks

bool IsLowerHexOf(std::string_view text, size_t size) {
  return text.size() == size && std::all_of(text.begin(), text.end(), IsLowerHex);
}

std::string FormatVmmBuffer(const cuda::IpcDescriptor& descriptor) {
  std::string text = descriptor.device_uuid + ":" + std::string(kVmmPrefix) + descriptor.vmm_exporter + "." +
                     descriptor.vmm_token + ":" + std::to_string(descriptor.offset) + ":";
  for (size_t i = 0; i < descriptor.vmm_pieces.size(); ++i) {
    if (i > 0) text += ',';
    text +=
        std::to_string(descriptor.vmm_pieces[i].block) + "/" + std::to_string(descriptor.vmm_pieces[i].size);
  }
  return text;
}

// "vmm.<pid>.<16 hex nonce>.<32 hex token>" and "<block>/<size>[,...]".
Status ParseVmmFields(std::string_view source, std::string_view pieces, cuda::IpcDescriptor& descriptor) {
  const std::vector<std::string_view> parts = SplitFields(source.substr(kVmmPrefix.size()), '.');
  if (parts.size() != 3 || !IsLowerHexOf(parts[1], 16) || !IsLowerHexOf(parts[2], 32)) {
    return Status::ValidationError("a cuda_vmm source is 'vmm.<pid>.<16 hex digits>.<32 hex digits>', got '",
                                   source, "'");
  }
  TESS_ASSIGN_OR_RETURN(int64_t pid, Decimal(parts[0], "the exporter's pid"));
  descriptor.vmm_exporter = std::to_string(pid) + "." + std::string(parts[1]);
  descriptor.vmm_token = std::string(parts[2]);
  const std::vector<std::string_view> listed = SplitFields(pieces, ',');
  if (listed.size() > kMaxVmmPieces) {
    return Status::ValidationError("a cuda_vmm buffer lists at most ", kMaxVmmPieces, " allocations, got ",
                                   listed.size());
  }
  int64_t total = 0;
  for (std::string_view piece : listed) {
    const std::vector<std::string_view> pair = SplitFields(piece, '/');
    if (pair.size() != 2) {
      return Status::ValidationError("a cuda_vmm allocation is '<block id>/<size>', got '", piece, "'");
    }
    TESS_ASSIGN_OR_RETURN(int64_t block, Decimal(pair[0], "the block id"));
    TESS_ASSIGN_OR_RETURN(int64_t size, Decimal(pair[1], "the allocation size"));
    if (size == 0 || size > (int64_t{1} << 50) - total) {
      return Status::ValidationError("cuda_vmm allocations have 1 byte to 2**50 bytes in all, got '", piece,
                                     "'");
    }
    total += size;
    descriptor.vmm_pieces.push_back({static_cast<uint64_t>(block), size});
  }
  descriptor.allocation_size = total;
  return Status::OK();
}

}  // namespace

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor) {
  if (descriptor.is_vmm()) return FormatVmmBuffer(descriptor);
  const std::string handle = descriptor.has_handle ? codec::Base64String(descriptor.handle) : std::string();
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
  if (fields[1].starts_with(kVmmPrefix)) {
    TESS_RETURN_IF_ERROR(ParseVmmFields(fields[1], fields[3], descriptor));
    return descriptor;
  }
  TESS_ASSIGN_OR_RETURN(descriptor.allocation_size, Decimal(fields[3], "the allocation size"));
  if (fields[1].empty()) return descriptor;
  TESS_RETURN_IF_ERROR(DecodeIpcHandle(fields[1], descriptor.handle));
  descriptor.has_handle = true;
  return descriptor;
}

}  // namespace tesscpp::gpu_transport
