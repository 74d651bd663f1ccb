// served_server.h: a server a client starts and owns (a process for
// FromSource, a container for FromImage), with the scratch directories made
// for it; both go with the ServedServer. Also the steps both kinds share:
// the directories, the TESSERACT_* settings, waiting for health.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/client.h"

namespace tesscpp {
class TesseractSession;
}

namespace tesscpp {

namespace client {

/// \brief A running server this client owns.
class OwnedServer {
 public:
  virtual ~OwnedServer() = default;
  /// \brief Stops it for good; idempotent.
  virtual void Stop() = 0;
  /// \brief What it printed so far (kept after Stop).
  virtual std::string Logs() const = 0;
  /// \brief The container serving it; kInvalidArgument for a process.
  virtual Result<ContainerInfo> Describe() const {
    return Status::InvalidArgument("container_info is only available for a Tesseract made by from_image");
  }
};

struct ServedServer {
  std::unique_ptr<OwnedServer> process;
  std::vector<std::string> scratch_dirs;  ///< removed on Stop (the log's own directory last)
  std::string last_logs;                  ///< what the server printed, kept after Stop

  ServedServer() = default;
  ServedServer(const ServedServer&) = delete;
  ServedServer& operator=(const ServedServer&) = delete;
  ~ServedServer() { Stop(); }

  /// \brief Stops the process and removes the scratch directories; idempotent.
  void Stop();
  std::string Logs() const { return process != nullptr ? process->Logs() : last_logs; }
};

/// \brief The input and output directories of a served Tesseract, absolute,
/// as ServeOptions asks: temporary ones (recorded in server.scratch_dirs)
/// where none is given; input only when given or for json+binref.
/// kInvalidArgument for an unknown output format. `who` prefixes messages.
Result<std::pair<std::string, std::string>> PrepareServeDirs(const ServeOptions& options,
                                                             ServedServer& server, std::string_view who);

/// \brief The TESSERACT_* settings both kinds serve with, apart from the
/// paths: debug mode, the output format, runtime_config as TESSERACT_<KEY>,
/// the client's token as TESSERACT_API_TOKEN (the server then requires it),
/// and the GPU transport (`transport_default` when neither the option nor
/// runtime_config names one; nullopt: leave it unset).
std::vector<std::pair<std::string, std::string>> ServeSettings(
    const ServeOptions& options, const std::optional<std::string>& transport_default);

/// \brief The transport calls request: the option, else runtime_config's.
std::optional<std::string> RequestedTransport(const ServeOptions& options);

/// \brief The session of a served Tesseract now healthy at `url`: the client
/// of `options` reading the host side of its folders and requesting its
/// output format and GPU transport; it owns `server`.
Result<std::shared_ptr<TesseractSession>> ConnectServed(const std::string& url, const ServeOptions& options,
                                                        const std::string& input_path,
                                                        const std::string& output_path,
                                                        std::unique_ptr<ServedServer> server);

/// \brief Polls GET `url`/health every 20 ms (with `token`, if any) until it
/// answers 200 (OK), `alive` says the server is gone (kUnavailable) or
/// `deadline` passes (kDeadlineExceeded).
Status WaitForHealth(const std::string& url, const std::string& token, const std::function<bool()>& alive,
                     std::chrono::steady_clock::time_point deadline);

/// \brief A TCP port of `host_ip` ("0.0.0.0": every interface) that nobody
/// listens on now, in [first, last] (0, 0: any the kernel picks). Another
/// process may take it before the caller binds it: callers retry.
/// kUnavailable when every port in the range is taken.
Result<int> FreePort(const std::string& host_ip, int first = 0, int last = 0);

/// \brief The deadline `timeout_s` from now.
std::chrono::steady_clock::time_point DeadlineIn(double timeout_s);

/// \brief The error for a server that did not become healthy: `what` (e.g.
/// "from_source: the server for 'x' (tesscpp)") is followed by why and the
/// server's log; kUnavailable when it `exited` (`state` says how),
/// kDeadlineExceeded after `timeout_s`, else `cause`'s code.
Status StartupFailure(const std::string& what, bool exited, const std::string& state, double timeout_s,
                      const Status& cause, const std::string& logs);

}  // namespace client
}  // namespace tesscpp
