// cuda_ipc_transport.h: the built-in transport's registry entry (internal).
//
// tesseract-core 1.15's cuda_ipc (legacy CUDA IPC handles, the export
// registry, the transport check) with tesscpp's extensions, each offered in
// headers a 1.15 peer ignores (docs/gpu-transport-protocol.md 11-13).
#pragma once

#include <memory>

#include "gpu_transport/registry.h"

namespace tesscpp::gpu_transport {

/// \brief Its server (cuda_ipc_server.cc) and client (cuda_ipc_client.cc).
std::unique_ptr<ServerTransport> MakeCudaIpcServer(const ServerTransportOptions& options);
std::unique_ptr<ClientTransport> MakeCudaIpcClient(const ClientTransportOptions& options);

/// \brief The entry: the factories above, the buffer grammar of
/// cuda_ipc_buffer.h, available in builds with CUDA, served from one
/// process that shares the host's IPC namespace and sees the GPUs, and the
/// client's automatic choice.
TransportEntry CudaIpcTransport();

}  // namespace tesscpp::gpu_transport
