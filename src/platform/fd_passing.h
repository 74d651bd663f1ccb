// fd_passing.h: handing file descriptors to other processes over a Unix
// socket (SCM_RIGHTS), on request (internal).
//
// A process that owns something only a descriptor can name (a CUDA VMM
// allocation exported as a POSIX fd) listens on an abstract Unix socket; a
// peer connects, sends one request line and receives the descriptors. Abstract
// names live in the network namespace, so a successful connect also proves
// that the two processes can reach each other this way.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tesscpp/internal/platform/file.h"
#include "tesscpp/result.h"

namespace tesscpp::platform {

/// \brief Serves descriptors on an abstract Unix socket, one connection at a
/// time, from a thread of its own. Stops (and joins) on destruction.
class FdServer {
 public:
  /// \brief Answers one request line (without its newline) with descriptors
  /// the handler keeps owning (the peer receives duplicates), or an error
  /// whose message the peer gets.
  using Handler = std::function<Result<std::vector<int>>(std::string_view request)>;

  /// \brief Listens on the abstract name `name` (no leading NUL). `tick`, if
  /// set, runs on the server's thread about every `tick_ms` (not more often,
  /// however many connections come), never at the same time as `handler`.
  static Result<std::unique_ptr<FdServer>> Start(std::string name, Handler handler,
                                                 std::function<void()> tick = nullptr, int tick_ms = 1000);
  ~FdServer();
  FdServer(const FdServer&) = delete;
  FdServer& operator=(const FdServer&) = delete;

  const std::string& name() const { return name_; }

 private:
  FdServer(std::string name, Fd listener, Fd stop, Handler handler, std::function<void()> tick, int tick_ms);
  void Serve();
  void Answer(const Fd& connection);

  std::string name_;
  Fd listener_;
  Fd stop_;  // an eventfd: written to stop the thread
  Handler handler_;
  std::function<void()> tick_;
  int tick_ms_;
  std::thread thread_;
};

/// \brief Sends `request` to the FdServer at `name` and returns the
/// `expected` descriptors it answers with (close-on-exec, owned by the
/// caller). Errors: kUnavailable when nothing listens there, the exchange
/// fails, a read waits longer than `timeout_ms`, or the server offers another
/// number of descriptors; kNotFound with the server's message when it refused.
Result<std::vector<Fd>> RequestFds(std::string_view name, std::string_view request, size_t expected,
                                   int timeout_ms = 60000);

/// \brief Whether something listens on the abstract name `name` (a connect
/// succeeds).
bool AbstractSocketListening(std::string_view name);

}  // namespace tesscpp::platform
