#include "http/worker_exec.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tesscpp/internal/http_server.h"

extern char** environ;

namespace tesscpp::http {
namespace {

// In the child between fork and exec: fcntl is async-signal-safe.
bool KeepAcrossExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  return flags >= 0 && ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) == 0;
}

bool ParseInt(std::string_view text, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

WorkerExec::WorkerExec(const std::vector<std::string>& command, int listen_fd, int metrics_fd, int slot)
    : listen_fd_(listen_fd), metrics_fd_(metrics_fd) {
  const std::string prefix = std::string(kWorkerHandoffVariable) + "=";
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::strncmp(*variable, prefix.c_str(), prefix.size()) != 0) strings_.emplace_back(*variable);
  }
  strings_.push_back(prefix + std::to_string(listen_fd) + "," + std::to_string(metrics_fd) + "," +
                     std::to_string(slot));
  const size_t environment = strings_.size();
  strings_.insert(strings_.end(), command.begin(), command.end());
  // Pointers only now: the vector no longer moves its strings.
  for (size_t i = 0; i < strings_.size(); ++i)
    (i < environment ? envp_ : argv_).push_back(strings_[i].data());
  envp_.push_back(nullptr);
  argv_.push_back(nullptr);
  exec_failed_ =
      "tesscpp: cannot start a worker: exec of '" + (command.empty() ? "" : command[0]) + "' failed\n";
}

pid_t WorkerExec::Start(const sigset_t& signal_mask) const {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(0);
  ::pthread_sigmask(SIG_SETMASK, &signal_mask, nullptr);
  if (argv_.size() > 1 && KeepAcrossExec(listen_fd_) && KeepAcrossExec(metrics_fd_)) {
    ::execve(argv_[0], argv_.data(), envp_.data());
  }
  (void)!::write(2, exec_failed_.data(), exec_failed_.size());
  ::_exit(127);
}

Result<std::optional<HttpServerOptions::WorkerHandoff>> TakeWorkerHandoff() {
  const char* value = std::getenv(kWorkerHandoffVariable);
  if (value == nullptr) return std::optional<HttpServerOptions::WorkerHandoff>();
  const std::string text = value;
  ::unsetenv(kWorkerHandoffVariable);
  HttpServerOptions::WorkerHandoff handoff;
  const size_t first = text.find(',');
  const size_t second = first == std::string::npos ? first : text.find(',', first + 1);
  const std::string_view view = text;
  if (second == std::string::npos || !ParseInt(view.substr(0, first), handoff.listen_fd) ||
      !ParseInt(view.substr(first + 1, second - first - 1), handoff.metrics_fd) ||
      !ParseInt(view.substr(second + 1), handoff.slot) || handoff.slot < 0) {
    return Status::InvalidArgument(
        kWorkerHandoffVariable, "='", text,
        "' is not '<listen fd>,<metrics fd>,<slot>' (it is set by tesscpp's supervisor "
        "for its workers, never by hand)");
  }
  // Not passed on again: the component's own subprocesses get neither.
  for (const int fd : {handoff.listen_fd, handoff.metrics_fd}) {
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      return Status::InvalidArgument(kWorkerHandoffVariable, " names descriptor ", fd,
                                     ", which this process does not have open");
    }
  }
  return std::optional<HttpServerOptions::WorkerHandoff>(handoff);
}

}  // namespace tesscpp::http
