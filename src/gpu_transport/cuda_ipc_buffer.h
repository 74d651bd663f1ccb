// cuda_ipc_buffer.h: the `data.buffer` string of a cuda_ipc arraydict (internal).
//
//   "<device uuid>:<base64 of the 64-byte IPC handle>:<offset>:<allocation size>"
//
// with the UUID in lowercase 8-4-4-4-12 form; empty arrays carry no handle
// ("<uuid>::0:0"). This is tesseract-core 1.15's spelling (docs/gpu-transport-protocol.md 3).
// tesscpp's cuda_vmm extension, sent only to peers that asked for it (docs/gpu-transport-protocol.md 13):
//
//   "<uuid>:vmm.<pid>.<nonce>.<token>:<offset>:<block>/<size>[,<block>/<size>...]"
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/cuda/ipc_descriptor.h"
#include "tesscpp/result.h"

namespace tesscpp::gpu_transport {

/// \brief The transport's name, which is also its arrays' wire encoding.
inline constexpr std::string_view kCudaIpcName = "cuda_ipc";

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor);

/// \brief Parses what the reference's request model accepts (its pattern
/// `^<uuid>:[A-Za-z0-9+/=]*:\d+:\d+$`), and further requires a handle that
/// decodes to exactly 64 bytes and numbers that fit 63 bits; or a cuda_vmm
/// buffer (at most 65536 allocations, each non-empty, 2**50 bytes in all).
Result<cuda::IpcDescriptor> ParseCudaIpcBuffer(std::string_view text);

/// \brief The pieces of that grammar which the IPC-event headers share
/// (src/gpu_transport/ipc_events.h): a field list split on `separator`, a
/// device UUID in canonical form, a 64-byte handle from its base64.
std::vector<std::string_view> SplitFields(std::string_view text, char separator);
Status CheckDeviceUuid(std::string_view text);
Status DecodeIpcHandle(std::string_view text, std::array<uint8_t, cuda::IpcDescriptor::kHandleSize>& handle);

}  // namespace tesscpp::gpu_transport
