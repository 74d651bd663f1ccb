// registry.h: the GPU transports this process knows, by name (internal).
//
// A transport is one entry: its name (TESSERACT_GPU_TRANSPORT, the Accept
// header's gpu_transport parameter), the wire encoding its arrays travel in,
// its server and client factories, what a container serving it needs, and
// whether it runs here. The runtime, the client (requests, checks, its
// automatic choice), image sessions, help texts and the Python package read
// the registry and name no transport themselves; cuda_ipc is the built-in
// entry (cuda_ipc_transport.h). A new transport is an entry passed to
// RegisterTransport before it is served or requested
// (tests/transport/staged_transport_test.cc registers one from a test).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_transport/client_transport.h"
#include "gpu_transport/server_transport.h"
#include "tesscpp/internal/codec/device_arrays.h"
#include "tesscpp/internal/gpu_transport/gpu_transports.h"
#include "tesscpp/result.h"

namespace tesscpp::gpu_transport {

/// \brief The name of "no transport": device arrays are copied through the host.
inline constexpr std::string_view kNoTransport = "none";

struct TransportEntry {
  std::string name;
  /// The arraydict "encoding" its descriptors are written with.
  std::string wire_encoding;
  /// Whether `descriptor` is well-formed, as the peers' request model
  /// checks it (kValidationError otherwise), so that a server that does not
  /// serve the transport refuses its arrays as a tesseract-core server would.
  std::function<Status(std::string_view descriptor)> check_descriptor;
  /// OK when the transport can run in this process; otherwise why not
  /// (a build without CUDA, no device).
  std::function<Status()> available;
  std::function<std::unique_ptr<ServerTransport>(const ServerTransportOptions&)> make_server;
  std::function<std::unique_ptr<ClientTransport>(const ClientTransportOptions&)> make_client;
  /// What a container serving it needs: engine flags, and GPU access.
  std::vector<std::string> container_flags;
  bool needs_gpus = false;
  /// Its exports live in the serving process: one worker serves it.
  bool one_worker = false;
  /// The client tries it when a call asks for no transport (tesseract-core's
  /// _AUTO_GPU_TRANSPORTS), in registration order.
  bool automatic = false;
};

/// \brief Every transport, built-in ones first, then in registration order.
/// Entries live as long as the process.
std::vector<const TransportEntry*> Transports();

/// \brief The entry named `name`; null for "none" and unknown names.
const TransportEntry* FindTransport(std::string_view name);

/// \brief The entry named `name` (null for "none"); kInvalidArgument naming
/// the known transports for any other name.
Result<const TransportEntry*> TransportNamed(std::string_view name);

/// \brief Adds a transport. kInvalidArgument for an entry missing a name,
/// an encoding, a check or a factory, or whose name or wire encoding is
/// taken already ("none" and the host encodings included).
Status RegisterTransport(TransportEntry entry);

/// \brief How a server reads a request's device arrays: the served
/// transport's arrays through `served` (null when none is served), any other
/// known transport's refused as tesseract-core refuses them ("GPU transport
/// '<name>' is not enabled on this Tesseract (available: (...))"), once
/// their descriptor passed its check.
std::unique_ptr<DeviceArrayReader> ServerRequestArrays(std::unique_ptr<DeviceArrayReader> served,
                                                       std::string_view served_name);

}  // namespace tesscpp::gpu_transport
