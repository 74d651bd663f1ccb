// container.cc: run, watch, describe and remove one container.
#include "client/container.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

extern "C" char** environ;  // NOLINT: the process environment, passed to children

namespace tesscpp::client {
namespace {

// The watcher: waits for a line or end of file on stdin; anything but "keep"
// (end of file: the owner is gone) removes the container. "$@" is the removal
// command, so no part of it is ever parsed by the shell.
constexpr const char* kWatcherScript = R"(read -r line; [ "$line" = keep ] || exec "$@" >/dev/null 2>&1)";

}  // namespace

Status Container::StartWatcher() {
  // A socket pair rather than a pipe: telling a watcher that died "keep"
  // must not raise SIGPIPE in the owner (send has MSG_NOSIGNAL).
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    return Status::IoError("socketpair: ", std::strerror(errno));
  platform::Fd watcher_end(ends[0]);
  watcher_pipe_ = platform::Fd(ends[1]);
  std::vector<std::string> argv = {"/bin/sh", "-c", kWatcherScript, "tesscpp-container-watcher"};
  for (const std::string& word : engine_.Command({"rm", "-f", name_})) argv.push_back(word);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: spawn's C API
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, watcher_end.get(), 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A session of its own: Ctrl-C in the owner's terminal, or a kill of the
  // owner's process group, must not take the watcher with it.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  const int spawned = ::posix_spawn(&watcher_, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    watcher_ = -1;
    watcher_pipe_ = platform::Fd();
    return Status::IoError("cannot start the container watcher (/bin/sh): ", std::strerror(spawned));
  }
  return Status::OK();
}

void Container::ReleaseWatcher() {
  if (watcher_ <= 0) return;
  static constexpr char kKeep[] = "keep\n";
  (void)::send(watcher_pipe_.get(), kKeep, sizeof kKeep - 1, MSG_NOSIGNAL);
  watcher_pipe_ = platform::Fd();
  int status = 0;
  while (::waitpid(watcher_, &status, 0) < 0 && errno == EINTR) {
  }
  watcher_ = -1;
}

Result<std::unique_ptr<Container>> Container::Run(ContainerEngine engine, std::string name,
                                                  const std::vector<std::string>& run_args) {
  std::unique_ptr<Container> container(new Container(std::move(engine), std::move(name)));
  TESS_RETURN_IF_ERROR(container->StartWatcher());
  std::vector<std::string> args = {"run", "--detach", "--name", container->name_};
  args.insert(args.end(), run_args.begin(), run_args.end());
  auto id = container->engine_.RunOk(args);
  if (!id.ok()) {
    // A refused publish leaves the container created but never started.
    container->Stop();
    return id.status();
  }
  std::string trimmed = *id;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
  container->id_ = trimmed.substr(trimmed.find_last_of('\n') + 1);  // after any pull progress
  return container;
}

Container::~Container() { Stop(); }

Result<std::pair<std::string, int>> Container::State() const {
  TESS_ASSIGN_OR_RETURN(std::string out, engine_.RunOk({"inspect", "--format",
                                                        "{{.State.Status}} {{.State.ExitCode}}", name_}));
  std::istringstream words(out);
  std::pair<std::string, int> state{"", 0};
  words >> state.first >> state.second;
  return state;
}

std::string Container::Logs() const {
  if (removed_) return last_logs_;
  auto logs = engine_.Run({"logs", name_});
  if (!logs.ok()) return last_logs_;
  // The engine splits the container's stdout and stderr; the server writes
  // its log lines to one of them.
  return logs->out + logs->err;
}

void Container::Stop() {
  if (removed_) return;
  last_logs_ = Logs();
  (void)engine_.Run({"rm", "-f", name_});
  removed_ = true;
  ReleaseWatcher();
}

void Container::set_published(std::string host_ip, int host_port, std::string url) {
  host_ip_ = std::move(host_ip);
  host_port_ = host_port;
  url_ = std::move(url);
}

Result<ContainerInfo> Container::Describe() const {
  if (removed_)
    return Status::InvalidArgument("the container ", name_, " was removed (the Tesseract is torn down)");
  TESS_ASSIGN_OR_RETURN(Value attrs, engine_.Inspect({"container", "inspect", name_}));
  ContainerInfo info;
  info.id = id_;
  info.name = name_;
  info.host_ip = host_ip_;
  info.host_port = host_port_;
  info.url = url_;
  if (attrs.is_dict()) {
    const Value::Dict& dict = attrs.as_dict();
    if (const Value* config = dict.find("Config"); config != nullptr && config->is_dict()) {
      if (const Value* image = config->as_dict().find("Image"); image != nullptr && image->is_string())
        info.image = image->as_string();
    }
    if (const Value* state = dict.find("State"); state != nullptr && state->is_dict()) {
      if (const Value* status = state->as_dict().find("Status"); status != nullptr && status->is_string())
        info.status = status->as_string();
    }
  }
  info.attrs = std::move(attrs);
  return info;
}

}  // namespace tesscpp::client
