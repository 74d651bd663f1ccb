// served_server.h: the server process FromSource starts, with the scratch
// directories it made for it; both go with this object.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "client/server_process.h"

namespace tesscpp {

struct ServedServer {
  std::unique_ptr<client::ServerProcess> process;
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

}  // namespace tesscpp
