// server_process.h: a server process that a client starts and owns
// (Tesseract::FromSource).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/served_server.h"
#include "tesscpp/result.h"

namespace tesscpp::client {

/// \brief A child process in a process group of its own, stdout and stderr
/// into `log_path`. Destruction stops it (SIGTERM, SIGKILL after a grace
/// period) with everything it started in its group.
class ServerProcess final : public OwnedServer {
 public:
  /// \brief Starts `argv` with environment `env` ("NAME=value" each) in `workdir`.
  static Result<std::unique_ptr<ServerProcess>> Start(const std::vector<std::string>& argv,
                                                      const std::vector<std::string>& env,
                                                      const std::string& workdir, std::string log_path);
  ~ServerProcess() override;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// \brief Whether it still runs; records the exit status once it ended.
  bool Alive();
  /// \brief "exited with status N" / "killed by signal N" / "running".
  std::string State() const;
  /// \brief What it printed so far.
  std::string Logs() const override;
  /// \brief SIGTERM, then SIGKILL after 10 s; the whole group is killed.
  void Stop() override;

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  int wait_status_ = 0;
  bool exited_ = false;
  std::string log_path_;
};

/// \brief The URL a server's log says it listens on, from its whole line:
/// `tesscpp serve`'s "tesscpp: serving <name> on <url>" (`tesscpp`) or
/// uvicorn's "Uvicorn running on <url> ..."; nullopt until the line is
/// complete (its newline written). A line read while the server was still
/// writing it would give a cut URL ("http://127.0.0.1" without its port).
std::optional<std::string> ListeningUrl(const std::string& logs, bool tesscpp);

}  // namespace tesscpp::client
