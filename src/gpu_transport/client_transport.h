// client_transport.h: the client's side of GPU transports (internal).
//
// An HTTP session holds a ClientTransport per transport it used with its
// server (SessionTransports, session_transports.h) and opens a ClientCall for
// every request; the session calls it at fixed points and names no
// transport, header or extension itself. tesseract-core 1.15's cuda_ipc, with
// tesscpp's extensions to it (borrowed outputs under a lease, IPC events,
// VMM memory by reference: docs/gpu-transport-protocol.md 11-13), is the
// built-in implementation; a transport's registry entry (registry.h) makes
// its client.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/internal/codec/device_arrays.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::gpu_transport {

/// \brief An answer's header by name (case-insensitive); nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// \brief An answer to a request the transport sends itself (the check).
struct CheckAnswer {
  int status = 0;
  Buffer body;
  HeaderLookup header;
};
/// \brief POSTs a JSON body to the server's /check_gpu_transport.
using CheckPost = std::function<Result<CheckAnswer>(const Buffer& body)>;

/// \brief Whether memory went both ways in a transport check, and why not.
struct CheckOutcome {
  bool works = false;
  std::string reason;  ///< empty when it works
};

/// \brief One request, from encoding its body to decoding the answer.
class ClientCall {
 public:
  virtual ~ClientCall() = default;
  /// \brief Where the body's device tensors are exported while it is
  /// encoded; null when the request asks for another transport or none
  /// (they go as host copies then).
  virtual DeviceArrayWriter* inputs() = 0;
  /// \brief The request's headers, once its body was encoded from `payload`
  /// (null for a request without a body).
  virtual Result<std::vector<std::string>> Headers(const Value* payload) = 0;
  /// \brief The request got no answer: what it said is said again later.
  virtual void Unanswered() = 0;
  /// \brief The answer's status and headers are here: waits for what must be
  /// done before its arrays are read, and gives where its device arrays
  /// are read from (null: the request asked for another transport or none).
  virtual Result<DeviceArrayReader*> Answered(int status, const HeaderLookup& header) = 0;
  /// \brief The answer's outputs, decoded.
  virtual void Decoded(const Value& outputs) = 0;
};

class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  /// \brief A request: one that asks for this transport (`requested`), or
  /// another, which may still carry what the transport has to tell the server.
  virtual std::unique_ptr<ClientCall> Begin(bool requested) = 0;
  /// \brief The client's half of POST /check_gpu_transport, sent through
  /// `post`: memory exported to the server and read back from it. Memory
  /// that does not go through is an outcome that says why; an error is an
  /// answer that is no check reply (`peer` names the server in its message).
  virtual Result<CheckOutcome> Check(std::string_view peer, const CheckPost& post) = 0;
  /// \brief The headers of one last request as the session closes (what is
  /// left to acknowledge, after waiting for the device work that reads it),
  /// or nullopt when nothing is left.
  virtual std::optional<std::vector<std::string>> Closing() = 0;
};

struct ClientTransportOptions {
  bool ipc_events = false;  ///< offer tesscpp's IPC events (ClientOptions::cuda_ipc_events)
  /// Kept alive by borrowed outputs (the served server, if the client started
  /// it); only they hold it, so that tearing down stops a server nothing reads.
  std::weak_ptr<void> server;
};

}  // namespace tesscpp::gpu_transport
