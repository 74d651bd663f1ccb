// cuda_ipc_buffer.h: the `data.buffer` string of a cuda_ipc arraydict (internal).
//
//   "<device uuid>:<base64 of the 64-byte IPC handle>:<offset>:<allocation size>"
//
// with the UUID in lowercase 8-4-4-4-12 form; empty arrays carry no handle
// ("<uuid>::0:0"). This is tesseract-core 1.15's spelling (docs/gpu-transport.md 3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/cuda_ipc.h"

namespace tesscpp::internal {

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor);

/// \brief Parses what the reference's request model accepts (its pattern
/// `^<uuid>:[A-Za-z0-9+/=]*:\d+:\d+$`), and further requires a handle that
/// decodes to exactly 64 bytes and numbers that fit 63 bits.
Result<cuda::IpcDescriptor> ParseCudaIpcBuffer(std::string_view text);

/// \brief The value of tesscpp's Tesscpp-Inputs-Event and Tesscpp-Exports-Event
/// headers (docs/gpu-transport.md 14): "<device uuid>:<base64 of the 64-byte
/// event handle>" per device, joined by ','.
std::string FormatIpcEvents(const std::vector<cuda::IpcEvent>& events);

/// \brief Parses FormatIpcEvents' form strictly (at least one event; the
/// same UUID and handle rules as ParseCudaIpcBuffer).
Result<std::vector<cuda::IpcEvent>> ParseIpcEvents(std::string_view text);

/// \brief Records this process's IPC event on each of `devices` (after the
/// work it vouches for was queued) and returns the header value naming them;
/// empty for no devices.
Result<std::string> RecordIpcEvents(const std::vector<int>& devices);

/// \brief Waits for the peer's events a header value names (ParseIpcEvents'
/// errors for a malformed one).
Status WaitForIpcEvents(std::string_view header, cuda::IpcEventWait how);

/// \brief The Python exception tesseract-core names in a transport check's
/// reason for a failure like `status` ("ValueError" for bad input, else
/// "RuntimeError"), so reasons read the same from either implementation.
const char* TransportCheckExceptionName(const Status& status);

}  // namespace tesscpp::internal
