// container.h: a container this client runs and owns (FromImage), removed
// with it — also when this process dies without removing it (internal).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "client/served_server.h"
#include "tesscpp/internal/client/container_engine.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::client {

/// \brief A detached container. Before it is created, a watcher process
/// outside this one's process group is started holding the read end of a
/// pipe whose write end only this process holds: when this process ends
/// without a Stop (a crash, SIGKILL, an interpreter that never runs
/// destructors), the pipe closes and the watcher removes the container.
class Container final : public OwnedServer {
 public:
  /// \brief `engine run --detach --name <name> <run_args...>`. The name is
  /// ours to choose (tesseract-<hex>), so the watcher knows it before the
  /// engine does. kUnavailable / kNotFound / kInternal as ContainerEngine::RunOk.
  static Result<std::unique_ptr<Container>> Run(ContainerEngine engine, std::string name,
                                                const std::vector<std::string>& run_args);
  ~Container() override;
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  const std::string& name() const { return name_; }
  const std::string& id() const { return id_; }

  /// \brief The engine's state word ("running", "exited", ...) and exit code.
  Result<std::pair<std::string, int>> State() const;
  /// \brief stdout and stderr of the container so far (kept after Stop).
  std::string Logs() const override;
  /// \brief Removes the container (`rm -f`) after keeping its logs; releases
  /// the watcher. Idempotent.
  void Stop() override;
  /// \brief `inspect` of the container and where it is published, set by the
  /// caller once known.
  Result<ContainerInfo> Describe() const override;
  void set_published(std::string host_ip, int host_port, std::string url);

 private:
  Container(ContainerEngine engine, std::string name) : engine_(std::move(engine)), name_(std::move(name)) {}
  Status StartWatcher();
  void ReleaseWatcher();

  ContainerEngine engine_;
  std::string name_;
  std::string id_;
  bool removed_ = false;
  std::string last_logs_;
  std::string host_ip_;
  int host_port_ = 0;
  std::string url_;
  platform::Fd watcher_pipe_;  ///< write end; closing it without "keep" removes the container
  pid_t watcher_ = -1;
};

}  // namespace tesscpp::client
