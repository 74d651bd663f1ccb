// ipc_events.h: tesscpp's IPC-event extension (docs/gpu-transport-protocol.md 12), the
// values of its Tesscpp-Inputs-Event and Tesscpp-Exports-Event headers (internal).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/cuda/cuda_ipc.h"
#include "tesscpp/result.h"

namespace tesscpp::gpu_transport {

/// \brief A header value: "<device uuid>:<base64 of the 64-byte
/// event handle>" per device, joined by ','.
std::string FormatIpcEvents(const std::vector<cuda::IpcEvent>& events);

/// \brief Parses FormatIpcEvents' form strictly (at least one event; the
/// same UUID and handle rules as ParseCudaIpcBuffer in cuda_ipc_buffer.h).
Result<std::vector<cuda::IpcEvent>> ParseIpcEvents(std::string_view text);

/// \brief Records this process's IPC event on each of `devices` (after the
/// work it vouches for was queued) and returns the header value naming them;
/// empty for no devices.
Result<std::string> RecordIpcEvents(const std::vector<int>& devices);

/// \brief Waits for the peer's events a header value names (ParseIpcEvents'
/// errors for a malformed one).
Status WaitForIpcEvents(std::string_view header, cuda::IpcEventWait how);

}  // namespace tesscpp::gpu_transport
