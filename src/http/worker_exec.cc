#include "http/worker_exec.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "tesscpp/internal/http/http_server.h"

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

WorkerExec::WorkerExec(const std::vector<std::string>& command, int listen_fd, int metrics_fd, int slot,
                       int calls_fd, int channel_fd)
    : handed_{listen_fd, metrics_fd, calls_fd, channel_fd} {
  const std::string prefix = std::string(kWorkerHandoffVariable) + "=";
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::strncmp(*variable, prefix.c_str(), prefix.size()) != 0) strings_.emplace_back(*variable);
  }
  std::string handoff =
      prefix + std::to_string(listen_fd) + "," + std::to_string(metrics_fd) + "," + std::to_string(slot);
  if (calls_fd >= 0 && channel_fd >= 0)
    handoff += "," + std::to_string(calls_fd) + "," + std::to_string(channel_fd);
  strings_.push_back(std::move(handoff));
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
  bool kept = argv_.size() > 1;
  for (const int fd : handed_) kept = kept && (fd < 0 || KeepAcrossExec(fd));
  if (kept) ::execve(argv_[0], argv_.data(), envp_.data());
  (void)!::write(2, exec_failed_.data(), exec_failed_.size());
  ::_exit(127);
}

Result<std::optional<HttpServerOptions::WorkerHandoff>> TakeWorkerHandoff() {
  const char* value = std::getenv(kWorkerHandoffVariable);
  if (value == nullptr) return std::optional<HttpServerOptions::WorkerHandoff>();
  const std::string text = value;
  ::unsetenv(kWorkerHandoffVariable);
  // Three numbers, or five for a guarded worker.
  std::vector<int> numbers;
  bool parsed = true;
  for (size_t begin = 0; parsed; begin = text.find(',', begin) + 1) {
    const size_t end = text.find(',', begin);
    int number = 0;
    parsed = ParseInt(std::string_view(text).substr(begin, end - begin), number);
    numbers.push_back(number);
    if (end == std::string::npos) break;
  }
  if (!parsed || (numbers.size() != 3 && numbers.size() != 5) || numbers[2] < 0) {
    return Status::InvalidArgument(
        kWorkerHandoffVariable, "='", text,
        "' is not '<listen fd>,<metrics fd>,<slot>[,<call table fd>,<channel fd>]' (it is set by tesscpp's "
        "supervisor for its workers, never by hand)");
  }
  HttpServerOptions::WorkerHandoff handoff;
  handoff.listen_fd = numbers[0];
  handoff.metrics_fd = numbers[1];
  handoff.slot = numbers[2];
  if (numbers.size() == 5) {
    handoff.calls_fd = numbers[3];
    handoff.channel_fd = numbers[4];
  }
  // Not passed on again: the component's own subprocesses get neither.
  for (const int fd : {handoff.listen_fd, handoff.metrics_fd, handoff.calls_fd, handoff.channel_fd}) {
    if (fd == -1 && numbers.size() == 3) continue;
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      return Status::InvalidArgument(kWorkerHandoffVariable, " names descriptor ", fd,
                                     ", which this process does not have open");
    }
  }
  return std::optional<HttpServerOptions::WorkerHandoff>(handoff);
}

}  // namespace tesscpp::http
