// session.h: one HTTP connection of the server (server.cc accepts them,
// session.cc serves them): Beast parses request headers, bodies are read by
// hand into pooled buffers, the Runtime answers on the connection's strand.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>

#include "http/call_guard.h"
#include "http/metrics.h"
#include "tesscpp/internal/http/http_server.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// What the sessions of one server share.
struct ServerState {
  std::atomic<bool> draining{false};
  std::atomic<int> in_flight{0};
  std::atomic<int64_t> body_bytes{0};
  ServerMetrics* metrics = nullptr;  // shared with the other workers
  int access_log_fd = -1;            // a copy of stderr from before any capture; -1: off
  CallReporter* calls = nullptr;     // tells the supervisor of connections and calls; null: none
  int worker = 0;                    // this process's slot in the metrics' per-worker gauges
};

/// \brief A connection, as the server that accepted it sees it.
class Connection {
 public:
  virtual ~Connection() = default;
  /// \brief Reads and answers requests until the connection closes.
  virtual void Start() = 0;
  /// \brief Called when the server drains: closes the connection (on its
  /// strand) if it waits for a request with none begun.
  virtual void CloseIfIdle() = 0;
  /// \brief Called by the sweeper: closes the connection (on its strand) if
  /// its current wait has outlived its deadline. False once it is closed.
  virtual bool CloseIfExpired(int64_t now_ns) = 0;
};

/// \brief A connection on `socket` (its executor a strand of its own).
std::shared_ptr<Connection> MakeSession(tcp::socket socket, const Runtime& runtime,
                                        const HttpServerOptions& options, ServerState& state);

}  // namespace tesscpp::http
