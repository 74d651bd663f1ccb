// The HTTP server: the accepting loop and its drain, in one process or in
// worker processes under a supervisor (which restarts a worker that dies and
// answers the calls it died in). Each connection is a Session (session.h).
#include "tesscpp/internal/http/http_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "http/call_guard.h"
#include "http/metrics.h"
#include "http/session.h"
#include "http/worker_exec.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/internal/platform/file.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::http {

struct HttpServer::Impl {
  Impl(const Runtime& r, const HttpServerOptions& o) : runtime(r), options(o), io(kThreads) {
    if (options.handoff) {
      metrics_fd = platform::Fd(options.handoff->metrics_fd);
      state.metrics = ServerMetrics::Map(metrics_fd.get());
      state.worker = options.handoff->slot;
      if (options.handoff->calls_fd >= 0) {
        const platform::Fd table_fd(options.handoff->calls_fd);  // the mapping outlives it
        if (CallTable* table = CallTable::Map(table_fd.get()); table != nullptr) {
          reporter =
              std::make_unique<CallReporter>(table, state.worker, platform::Fd(options.handoff->channel_fd));
          state.calls = reporter.get();
        }
      }
    } else {
      state.metrics = ServerMetrics::Create(metrics_fd);
    }
    if (options.access_log) state.access_log_fd = stderr_copy.get();
    if (options.body_budget_bytes < 0) {
      const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
      options.body_budget_bytes = memory > 0 ? memory / 4 : 0;
    }
  }
  // Two threads per process: with one inside a long endpoint, the other is
  // still free to answer /health and read other requests. More requests at
  // once take more processes (see server.h).
  static constexpr int kThreads = 2;

  const Runtime& runtime;
  HttpServerOptions options;
  // stderr as it was before any endpoint captured it into a run's log.
  platform::Fd stderr_copy{::fcntl(2, F_DUPFD_CLOEXEC, 3)};
  platform::Fd metrics_fd;  // the counters' memory, handed to exec'd workers
  ServerState state;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  asio::steady_timer sweep_timer{io};
  asio::steady_timer drain_timer{io};
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Connection>> sessions;
  std::atomic<bool> supervising{false};
  std::unique_ptr<CallGuard> guard;        // the supervisor's: its workers' connections
  std::unique_ptr<CallReporter> reporter;  // a worker's: what it tells the supervisor

  // Once a second: close connections whose wait outlived its deadline, forget
  // closed ones.
  void Sweep() {
    sweep_timer.expires_after(std::chrono::seconds(1));
    sweep_timer.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
      state.metrics->SampleMemory(state.worker);
      {
        std::lock_guard<std::mutex> lock(sessions_mutex);
        std::erase_if(sessions, [now](const std::weak_ptr<Connection>& weak) {
          auto session = weak.lock();
          return !session || !session->CloseIfExpired(now);
        });
      }
      Sweep();
    });
  }

  void Accept() {
    // Each connection gets a strand: its handlers never run concurrently,
    // whichever thread picks them up.
    acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        auto session = MakeSession(std::move(socket), runtime, options, state);
        {
          std::lock_guard<std::mutex> lock(sessions_mutex);
          sessions.push_back(session);
        }
        session->Start();
      }
      Accept();
    });
  }

  // Stops accepting, closes idle connections, lets the others answer what
  // they are handling (then close), and stops the loop when none is left or
  // the drain timeout passed.
  void Drain() {
    if (state.draining.exchange(true)) return;
    boost::system::error_code ignored;
    acceptor.close(ignored);
    signals.cancel(ignored);
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      for (const auto& weak : sessions) {
        if (auto session = weak.lock()) session->CloseIfIdle();
      }
    }
    WaitForSessions(std::chrono::steady_clock::now() + options.drain_timeout);
  }

  void WaitForSessions(std::chrono::steady_clock::time_point deadline) {
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      std::erase_if(sessions, [](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
      any = !sessions.empty();
    }
    if (any && std::chrono::steady_clock::now() >= deadline) AbandonRunningCalls();
    if (!any) {
      sweep_timer.cancel();
      io.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([this, deadline](boost::system::error_code ec) {
      if (!ec) WaitForSessions(deadline);
    });
  }

  // The drain timeout passed with calls still running. An endpoint cannot be
  // interrupted, and returning from Run() would leave it running on this
  // object as it is destroyed: the process ends here, as a drained one would
  // (status 0), and the callers' connections close unanswered.
  [[noreturn]] void AbandonRunningCalls() {
    const std::string line = "tesscpp: the drain timeout (" + std::to_string(options.drain_timeout.count()) +
                             " s) passed with calls still running; exiting without answering them\n";
    if (stderr_copy.valid()) (void)!::write(stderr_copy.get(), line.data(), line.size());
    std::_Exit(0);
  }

  // Serves in this process until drained.
  void Serve() {
    state.metrics->SampleMemory(state.worker);
    state.metrics->RetireResiduals(state.worker);  // before any call, on this one thread
    signals.async_wait([this](boost::system::error_code ec, int) {
      if (!ec) Drain();
    });
    Accept();
    Sweep();
    static_assert(kThreads == kCallThreads, "one cell of the call table per event-loop thread");
    std::vector<std::thread> threads;
    for (int i = 1; i < kThreads; ++i) {
      threads.emplace_back([this, i] {
        CallReporter::SetThreadCell(i);
        io.run();
      });
    }
    CallReporter::SetThreadCell(0);
    io.run();
    for (std::thread& t : threads) t.join();
  }

  struct Supervision;
  void Supervise(int processes);
  void WaitForEvents(Supervision& s);
  void ReapWorkers(Supervision& s);
  pid_t StartWorker(int slot, const sigset_t& worker_mask);
};

// How a supervisor hears SIGINT, SIGTERM and SIGCHLD: a handler writes the
// signal's number into a pipe it polls. Blocking the signals and reading
// them with sigtimedwait or a signalfd would not do: a process that hosts
// Python may have other threads (torch's pool) that do not block them, and a
// signal delivered to one of those would never reach the supervisor.
struct SupervisorSignals {
  static constexpr std::array<int, 3> kHandled = {SIGINT, SIGTERM, SIGCHLD};
  static inline int write_end = -1;

  static void Handle(int signal) {
    const int saved = errno;
    const auto number = static_cast<unsigned char>(signal);
    (void)!::write(write_end, &number, 1);
    errno = saved;
  }

  // Returns the pipe's read end (non-blocking).
  static platform::Fd Install() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return platform::Fd();
    write_end = ends[1];
    struct sigaction action {};
    action.sa_handler = &Handle;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int signal : kHandled) ::sigaction(signal, &action, nullptr);
    return platform::Fd(ends[0]);
  }

  // Default dispositions again (a forked worker, or a supervisor done).
  static void Restore() {
    for (const int signal : kHandled) ::signal(signal, SIG_DFL);
    if (write_end >= 0) ::close(std::exchange(write_end, -1));
  }
};

// Starts a worker process: it serves until drained, then exits. With a
// guard, the worker tells the supervisor of its connections and calls.
pid_t HttpServer::Impl::StartWorker(int slot, const sigset_t& worker_mask) {
  platform::Fd channel;
  if (guard != nullptr) {
    auto opened = guard->Open(slot);
    if (opened.ok()) {
      channel = *std::move(opened);
    } else {
      std::cerr << "tesscpp: worker " << slot << " runs unguarded: " << opened.status().message() << "\n";
    }
  }
  if (!options.worker_command.empty()) {
    const WorkerExec exec(options.worker_command, acceptor.native_handle(), metrics_fd.get(), slot,
                          channel.valid() ? guard->table_fd() : -1, channel.get());
    return exec.Start(worker_mask);
  }
  const HttpServerOptions::ForkHooks& hooks = options.fork_hooks;
  if (hooks.before) hooks.before();
  io.notify_fork(asio::execution_context::fork_prepare);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    io.notify_fork(asio::execution_context::fork_child);
    if (hooks.child) hooks.child();
    // A worker does not outlive its supervisor.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) std::_Exit(0);
    ::pthread_sigmask(SIG_SETMASK, &worker_mask, nullptr);
    // Its event loop drains on SIGINT and SIGTERM, as a single server's does.
    SupervisorSignals::Restore();
    boost::system::error_code ignored;
    signals.add(SIGINT, ignored);
    signals.add(SIGTERM, ignored);
    state.worker = slot;
    if (guard != nullptr) {
      guard->CloseInChild();
      if (channel.valid()) {
        reporter = std::make_unique<CallReporter>(guard->table(), slot, std::move(channel));
        state.calls = reporter.get();
      }
    }
    Serve();
    std::fflush(nullptr);
    // No destructors of what the fork copied, only the at_quick_exit
    // clean-ups of what this worker made (its ADOL-C tape directory).
    std::quick_exit(0);
  }
  io.notify_fork(asio::execution_context::fork_parent);
  if (hooks.parent) hooks.parent();
  return pid;
}

namespace {

// Where to listen: an IP address as written, or a host name resolved as
// uvicorn's socket.bind resolves it (getaddrinfo; its first IPv4 address, so
// "localhost" is 127.0.0.1 as there).
Result<tcp::endpoint> ListeningEndpoint(asio::io_context& io, const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  tcp::resolver resolver(io);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Status::InvalidArgument("cannot listen on host '", host,
                                   "': it is neither an IP address nor a name that resolves (",
                                   ec ? ec.message() : std::string("no address"), ")");
  }
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint();
  }
  return found.begin()->endpoint();
}

}  // namespace

// The supervisor's state while it runs its workers.
struct HttpServer::Impl::Supervision {
  using Clock = std::chrono::steady_clock;
  struct Worker {
    Clock::time_point started;
    int slot;
  };
  sigset_t worker_mask;
  platform::Fd signals;  // the read end of SupervisorSignals' pipe
  std::map<pid_t, Worker> workers;
  std::set<int> hung_up;            // slots whose channel closed: not waited on until restarted
  Clock::time_point channels_read;  // when the workers' messages were last taken in
  bool stopping = false;
  Clock::time_point kill_at = Clock::time_point::max();
  int quick_deaths = 0;

  void SignalAll(int signal) const {
    for (const auto& [pid, started] : workers) ::kill(pid, signal);
  }
};

// Waits up to 200 ms for a signal or a worker's message; takes the messages in.
// The workers' messages are taken in at most every kChannelPause: a burst of
// new connections then costs the supervisor one wake-up, not two per
// connection (the socket pairs hold what arrives meanwhile).
void HttpServer::Impl::WaitForEvents(Supervision& s) {
  constexpr auto kChannelPause = std::chrono::milliseconds(10);
  std::vector<pollfd> waited{{s.signals.get(), POLLIN, 0}};
  std::vector<int> slots{-1};
  const auto now = Supervision::Clock::now();
  if (guard != nullptr && now >= s.channels_read + kChannelPause) {
    for (const auto& [fd, slot] : guard->Channels()) {
      if (s.hung_up.count(slot) != 0) continue;
      waited.push_back({fd, POLLIN, 0});
      slots.push_back(slot);
    }
  }
  const int timeout = waited.size() > 1 ? 200 : 10;
  if (::poll(waited.data(), waited.size(), timeout) <= 0) return;
  for (size_t i = 1; i < waited.size(); ++i) {
    if (waited[i].revents == 0) continue;
    s.channels_read = Supervision::Clock::now();
    guard->Read(slots[i]);
    if ((waited[i].revents & (POLLHUP | POLLERR)) != 0) s.hung_up.insert(slots[i]);
  }
  unsigned char signal = 0;
  while (::read(s.signals.get(), &signal, 1) == 1) {
    if ((signal == SIGINT || signal == SIGTERM) && !s.stopping) {
      s.stopping = true;
      // The listening socket stays open while any process holds it: ours
      // goes now, so new connections are refused rather than queued.
      boost::system::error_code ignored;
      acceptor.close(ignored);
      s.kill_at = Supervision::Clock::now() + options.drain_timeout + std::chrono::seconds(5);
      s.SignalAll(SIGTERM);
    }
  }
}

// Reaps workers that ended: answers the calls they died in and starts
// others, unless stopping or workers keep dying as they start (which a
// restart would not fix; a worker that died in a call is the call's doing).
void HttpServer::Impl::ReapWorkers(Supervision& s) {
  int status = 0;
  for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
    auto it = s.workers.find(pid);
    if (it == s.workers.end()) continue;
    const bool quick = Supervision::Clock::now() - it->second.started < std::chrono::seconds(1);
    const int slot = it->second.slot;
    s.workers.erase(it);
    s.hung_up.erase(slot);
    const int answered = guard != nullptr ? guard->Settle(slot) : 0;
    if (s.stopping && answered == 0) continue;
    std::cerr << "tesscpp: worker " << pid << " died ("
              << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                      : "status " + std::to_string(WEXITSTATUS(status)))
              << ")";
    if (answered > 0) std::cerr << " in " << answered << " call(s), answered 500";
    if (s.stopping) {
      std::cerr << std::endl;
      continue;
    }
    if (quick && answered == 0 && ++s.quick_deaths > 5) {
      std::cerr << "; workers die as they start, stopping\n";
      s.stopping = true;
      s.kill_at = Supervision::Clock::now() + options.drain_timeout;
      s.SignalAll(SIGTERM);
      continue;
    }
    std::cerr << "; starting another" << std::endl;
    const pid_t fresh = StartWorker(slot, s.worker_mask);
    if (fresh > 0) s.workers.emplace(fresh, Supervision::Worker{Supervision::Clock::now(), slot});
  }
}

// The supervisor: starts the workers, restarts one that dies, answers the
// calls a dead one was computing (CallGuard), and on SIGTERM/SIGINT (or
// Stop()) passes the signal on and waits for every worker to drain.
void HttpServer::Impl::Supervise(int processes) {
  Supervision s;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &s.worker_mask);
  // The workers' event loops take SIGINT and SIGTERM (asio); this process
  // hears them through a pipe (below) instead.
  boost::system::error_code ignored;
  signals.clear(ignored);
  s.signals = SupervisorSignals::Install();
  supervising = true;
  auto made = CallGuard::Create();
  if (made.ok()) {
    guard = *std::move(made);
  } else {
    std::cerr << "tesscpp: workers run unguarded: " << made.status().message() << "\n";
  }
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = StartWorker(i, s.worker_mask);
    if (pid > 0) s.workers.emplace(pid, Supervision::Worker{Supervision::Clock::now(), i});
  }
  while (!s.workers.empty()) {
    WaitForEvents(s);
    if (s.stopping && Supervision::Clock::now() >= s.kill_at) {
      s.SignalAll(SIGKILL);
    }
    ReapWorkers(s);
  }
  SupervisorSignals::Restore();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const Runtime& runtime,
                                                      const HttpServerOptions& options) {
  auto impl = std::make_unique<Impl>(runtime, options);
  if (impl->state.metrics == nullptr) {
    return Status::Unavailable("cannot map the server's metrics: ", std::strerror(errno));
  }
  if (options.handoff) return AdoptListener(std::move(impl), options.handoff->listen_fd);
  TESS_ASSIGN_OR_RETURN(const tcp::endpoint endpoint,
                        ListeningEndpoint(impl->io, options.host, options.port));
  boost::system::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on ", options.host, ":", options.port, ": ", ec.message());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

// A worker started by exec serves the socket its supervisor listens on.
Result<std::unique_ptr<HttpServer>> HttpServer::AdoptListener(std::unique_ptr<Impl> impl, int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return Status::InvalidArgument("the handed listening socket (descriptor ", fd,
                                   ") is not a socket: ", std::strerror(errno));
  }
  boost::system::error_code ec;
  impl->acceptor.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) return Status::Unavailable("cannot serve the handed listening socket: ", ec.message());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Run() has returned by now (or never ran): nothing is left to stop.
HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::Run() {
  if (impl_->options.num_workers > 1 || impl_->options.supervise) {
    return impl_->Supervise(impl_->options.num_workers);
  }
  impl_->Serve();
}

void HttpServer::Stop() {
  if (impl_->supervising) {
    ::kill(::getpid(), SIGTERM);  // the supervisor waits for it
    return;
  }
  asio::post(impl_->io, [this] { impl_->Drain(); });
}

}  // namespace tesscpp::http
