// headers.h: the HTTP headers of the GPU transport, spelled once (internal).
//
// tesseract-core 1.15's export acknowledgement (docs/gpu-transport-protocol.md 5) and
// tesscpp's extensions to it, which 1.15 peers ignore: a client that borrows
// outputs (docs/gpu-transport-protocol.md 11), GPU work ordered by IPC events (12) and VMM allocations by
// reference (13). HTTP header names are
// case-insensitive; these are the spellings sent.
#pragma once

namespace tesscpp::gpu_transport {

/// Response: the id under which a response's exports are kept.
inline constexpr char kExportsHeader[] = "Tesseract-Exports";
/// Request: ids of exports the client is done with (',' separated); its
/// presence, even empty, marks a client that acknowledges.
inline constexpr char kExportsDoneHeader[] = "Tesseract-Exports-Done";
/// Request: the client process ("<pid>:<start ticks>") that borrows outputs.
inline constexpr char kBorrowerHeader[] = "Tesscpp-Borrower";
/// Response: "borrower" when the exports are kept for that process.
inline constexpr char kExportsLeaseHeader[] = "Tesscpp-Exports-Lease";
/// Request and response: "1" offers / accepts ordering by IPC events.
inline constexpr char kIpcEventsHeader[] = "Tesscpp-Ipc-Events";
/// Request: the client's events after which its cuda_ipc inputs are complete.
inline constexpr char kInputsEventHeader[] = "Tesscpp-Inputs-Event";
/// Response: the server's events after which its outputs are complete.
inline constexpr char kExportsEventHeader[] = "Tesscpp-Exports-Event";
/// Request: the client's cuda_vmm endpoint ("<pid>.<nonce>"), offering to map
/// VMM allocations; response: "1", the server maps the client's and may send
/// its own.
inline constexpr char kCudaVmmHeader[] = "Tesscpp-Cuda-Vmm";

}  // namespace tesscpp::gpu_transport
