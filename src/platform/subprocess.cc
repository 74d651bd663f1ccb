// subprocess.cc: posix_spawnp, pipes drained with poll, waitpid.
#include "tesscpp/internal/platform/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tesscpp/internal/platform/file.h"

extern "C" char** environ;  // NOLINT: the process environment, passed to children

namespace tesscpp::platform {
namespace {

std::vector<char*> CArgs(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: spawn's C API
  args.push_back(nullptr);
  return args;
}

Result<int> Wait(pid_t pid, const std::string& name) {
  int status = 0;
  pid_t waited = -1;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) return Status::IoError("cannot wait for ", name, ": ", std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Result<Finished> RunCaptured(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidArgument("no command to run");
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe: ", std::strerror(errno));
  Fd out_read(out_pipe[0]);
  Fd out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe: ", std::strerror(errno));
  Fd err_read(err_pipe[0]);
  Fd err_write(err_pipe[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  auto args = CArgs(argv);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return Status::NotFound("cannot run '", argv[0], "': ", std::strerror(spawned));
  out_write = Fd();
  err_write = Fd();
  Finished finished{-1, {}, {}};
  // Both streams at once: a child filling one pipe while we wait on the
  // other would never finish.
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* into[2] = {&finished.out, &finished.err};
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      // Never wait for a child that may block writing to pipes no one reads.
      ::kill(pid, SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        into[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  out_read = Fd();
  err_read = Fd();
  TESS_ASSIGN_OR_RETURN(finished.exit_code, Wait(pid, argv[0]));
  return finished;
}

Result<std::string> RunChecked(const std::vector<std::string>& argv) {
  TESS_ASSIGN_OR_RETURN(Finished finished, RunCaptured(argv));
  if (finished.exit_code != 0) {
    return Status::Internal("`", CommandLine(argv), "` exited with status ", finished.exit_code, ": ",
                            finished.err);
  }
  return std::move(finished.out);
}

Result<int> RunAttached(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidArgument("no command to run");
  auto args = CArgs(argv);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (spawned != 0) return Status::NotFound("cannot run '", argv[0], "': ", std::strerror(spawned));
  return Wait(pid, argv[0]);
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) line.append(line.empty() ? "" : " ").append(a);
  return line;
}

}  // namespace tesscpp::platform
