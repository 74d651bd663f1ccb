// cuda_ipc_buffer.h: the `data.buffer` string of a cuda_ipc arraydict (internal).
//
//   "<device uuid>:<base64 of the 64-byte IPC handle>:<offset>:<allocation size>"
//
// with the UUID in lowercase 8-4-4-4-12 form; empty arrays carry no handle
// ("<uuid>::0:0"). This is tesseract-core 1.15's spelling (docs/gpu-transport.md 3).
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/cuda_ipc.h"

namespace tesscpp::internal {

std::string FormatCudaIpcBuffer(const cuda::IpcDescriptor& descriptor);

/// \brief Parses what the reference's request model accepts (its pattern
/// `^<uuid>:[A-Za-z0-9+/=]*:\d+:\d+$`), and further requires a handle that
/// decodes to exactly 64 bytes and numbers that fit 63 bits.
Result<cuda::IpcDescriptor> ParseCudaIpcBuffer(std::string_view text);

/// \brief The Python exception tesseract-core names in a transport check's
/// reason for a failure like `status` ("ValueError" for bad input, else
/// "RuntimeError"), so reasons read the same from either implementation.
const char* TransportCheckExceptionName(const Status& status);

}  // namespace tesscpp::internal
