// server_process.cc: posix_spawn into a new process group; stop by signals.
#include "client/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace tesscpp::client {
namespace {

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings)
    out.push_back(const_cast<char*>(s.c_str()));  // posix_spawn's signature
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::vector<std::string>& argv,
                                                            const std::vector<std::string>& env,
                                                            const std::string& workdir,
                                                            std::string log_path) {
  if (argv.empty()) return Status::InvalidArgument("no command to start");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (!workdir.empty()) posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  pid_t pid = -1;
  auto args = CStrings(argv);
  auto environment = CStrings(env);
  const int error =
      posix_spawnp(&pid, argv[0].c_str(), &actions, &attributes, args.data(), environment.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) return Status::NotFound("cannot start '", argv[0], "': ", std::strerror(error));
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->pid_ = pid;
  p->log_path_ = std::move(log_path);
  return p;
}

ServerProcess::~ServerProcess() { Stop(); }

bool ServerProcess::Alive() {
  if (exited_ || pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    wait_status_ = status;
  }
  return !exited_;
}

std::string ServerProcess::State() const {
  if (!exited_) return "running";
  if (WIFEXITED(wait_status_)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  return "killed by signal " + std::to_string(WTERMSIG(wait_status_));
}

std::string ServerProcess::Logs() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  if (Alive()) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (Alive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (Alive()) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      if (::waitpid(pid_, &status, 0) == pid_) {
        exited_ = true;
        wait_status_ = status;
      }
    }
  }
  ::killpg(pid_, SIGKILL);  // whatever it left running in its group
  pid_ = -1;
}

// Both servers are started on port 0 and say which port the kernel gave them
// once it is bound, so no other process can take a port between our choosing
// it and the server binding it.
std::optional<std::string> ListeningUrl(const std::string& logs, bool tesscpp) {
  static const std::regex kTesscpp(R"(tesscpp: serving \S+ on (http://\S+)\r?\n)");
  static const std::regex kUvicorn(R"(Uvicorn running on (http://[^\s:]+:[0-9]+)[^\n]*\n)");
  std::smatch match;
  if (!std::regex_search(logs, match, tesscpp ? kTesscpp : kUvicorn)) return std::nullopt;
  return match[1].str();
}

}  // namespace tesscpp::client
