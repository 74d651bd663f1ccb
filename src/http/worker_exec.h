// worker_exec.h: worker processes started by exec rather than fork. A forked
// worker inherits its supervisor's memory but not its threads, so a
// component whose set-up started threads (a Python module whose import
// warmed torch's or JAX's pool) hangs in one. An exec'd worker sets itself up
// afresh, as tesseract-runtime's uvicorn workers do, and is handed what the
// workers share: the listening socket and the metrics' memory (by descriptor)
// and its slot, in one environment variable (TakeWorkerHandoff reads it).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace tesscpp::http {

/// \brief The environment variable a supervisor hands its exec'd workers:
/// "<listen fd>,<metrics fd>,<slot>", then ",<call table fd>,<channel fd>"
/// for a worker whose calls the supervisor guards (call_guard.h).
inline constexpr char kWorkerHandoffVariable[] = "TESSCPP_WORKER_HANDOFF";

/// \brief One worker's command line and environment, made before the fork:
/// the child of a threaded process may only make async-signal-safe calls, so
/// it allocates nothing between fork and exec.
class WorkerExec {
 public:
  /// `command` is argv with an absolute program path first; `calls_fd` and
  /// `channel_fd` are -1 for an unguarded worker.
  WorkerExec(const std::vector<std::string>& command, int listen_fd, int metrics_fd, int slot,
             int calls_fd = -1, int channel_fd = -1);
  WorkerExec(const WorkerExec&) = delete;
  WorkerExec& operator=(const WorkerExec&) = delete;

  /// \brief Forks; the child restores `signal_mask`, dies with this process
  /// (PR_SET_PDEATHSIG), keeps the handed descriptors open across the exec and
  /// execs the command (exiting 127, with a line on stderr, when it cannot).
  /// Returns the child's pid, or -1 when fork failed.
  pid_t Start(const sigset_t& signal_mask) const;

 private:
  std::vector<std::string> strings_;  // owns what argv_ and envp_ point into
  std::vector<char*> argv_;
  std::vector<char*> envp_;
  std::string exec_failed_;  // the line written when execve returns
  int handed_[4];            // the descriptors kept across the exec; -1 where none
};

}  // namespace tesscpp::http
