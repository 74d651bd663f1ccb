// session_transports.h: the client transports of one HTTP session (internal).
//
// A session may ask different transports in different requests (views made
// with another encoding share it). Each transport's client is made on its
// first use and kept: it may have things to tell the server on later requests
// that ask for another transport (cuda_ipc acknowledges exports on every one).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_transport/client_transport.h"
#include "gpu_transport/registry.h"
#include "tesscpp/result.h"

namespace tesscpp::gpu_transport {

class SessionTransports {
 public:
  explicit SessionTransports(ClientTransportOptions options) : options_(std::move(options)) {}

  /// \brief A request asking for `transport` ("none" or a registered name):
  /// one call that the requested transport's client and every other one the
  /// session made take part in. kInvalidArgument for a name this client does
  /// not implement.
  Result<std::unique_ptr<ClientCall>> Begin(std::string_view transport);

  /// \brief The client's half of `transport`'s check; an outcome that says
  /// so for a name this client does not implement.
  Result<CheckOutcome> Check(std::string_view transport, std::string_view peer, const CheckPost& post);

  /// \brief Every transport's closing headers, or nullopt when none has any.
  std::optional<std::vector<std::string>> Closing();

 private:
  ClientTransport* ClientOf(const TransportEntry& entry);

  ClientTransportOptions options_;
  std::mutex mutex_;
  std::vector<std::pair<const TransportEntry*, std::unique_ptr<ClientTransport>>> clients_;
};

}  // namespace tesscpp::gpu_transport
