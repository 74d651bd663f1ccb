// server.h: the HTTP/1.1 server in front of a Runtime (Boost.Beast; this
// header keeps Beast out of its includers).
//
// One process serves with two threads sharing one event loop: a request is
// handled on the thread that read it, so a long endpoint occupies one thread
// while the other keeps serving /health and other connections. With
// num_workers > 1 (or supervise) there are that many such processes sharing the listening
// socket (forks, or fresh processes given it: worker_command), under a
// supervisor that restarts one that dies and stops them all on SIGTERM (as
// tesseract-runtime's uvicorn workers): endpoints capture the
// process's stdout into their run's log, which only one call per process can
// do at a time. Bodies are read straight into pooled, padded buffers with
// large reads (the JSON parser then works in place), memory committed as the
// bytes arrive; responses are written from the encoder's buffer with one
// gathered write.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp {
class Runtime;
}  // namespace tesscpp

namespace tesscpp::http {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  ///< 0: any free port (see HttpServer::port())
  int num_workers = 1;   ///< requests handled at once: worker processes when > 1 (or supervise)
  /// Serve from worker processes even with one, under a supervisor that
  /// answers the calls of a worker that dies in them (a segfault in a
  /// component's native code) with a 500 and starts another
  /// (docs/serving.md, "Workers that crash"). Off: one process serves, and
  /// a crash ends the server.
  bool supervise = false;
  /// Larger request bodies get 413 before any byte of them is read.
  int64_t max_body_bytes = int64_t{4} << 30;
  /// Requests past their headers and not yet answered, per process; beyond
  /// this, 503 with Retry-After (GET /health is never refused). 0: no cap.
  int max_in_flight = 256;
  /// Declared body bytes of requests in flight, per process; a request that
  /// would pass it gets 503 with Retry-After before its body is read. 0: no
  /// budget. Default: a quarter of the machine's memory.
  int64_t body_budget_bytes = -1;
  /// On SIGTERM/SIGINT/Stop(): how long in-flight requests may take to finish
  /// before the server exits anyway.
  std::chrono::seconds drain_timeout{30};
  /// When set, every request must carry "Authorization: Bearer <token>"
  /// (compared in constant time); others get 401 with WWW-Authenticate.
  std::string token;
  /// With a token: GET /health (liveness and readiness) is answered without it.
  bool public_health = false;
  /// One JSON line per answered request on stderr (time, remote, method,
  /// target, status, duration_ms, bytes_in, bytes_out).
  bool access_log = false;
  /// An idle keep-alive connection is closed after this (uvicorn's is 60 s).
  std::chrono::seconds keep_alive_timeout{60};
  /// The whole body must arrive within this.
  std::chrono::seconds body_timeout{600};
  /// Run around each fork of a worker process, by a host whose runtime must
  /// take part: an embedded CPython needs PyOS_BeforeFork and
  /// PyOS_AfterFork_Parent/Child (what os.fork does), so that its locks and
  /// at-fork handlers are right in the worker. Any may be empty.
  struct ForkHooks {
    std::function<void()> before;
    std::function<void()> parent;
    std::function<void()> child;
  } fork_hooks;
  /// When not empty, workers are not forks of this process but fresh ones
  /// running this command (argv, an absolute program path first), each handed
  /// the listening socket, the shared metrics and its slot (WorkerHandoff).
  /// For a process whose state does not survive a fork: a Python module whose
  /// import started threads (a torch or JAX pool) gets them afresh in each.
  std::vector<std::string> worker_command;
  /// In a worker started by worker_command: what it was handed (from
  /// TakeWorkerHandoff()). Start() then serves that socket, as one process.
  struct WorkerHandoff {
    int listen_fd = -1;
    int metrics_fd = -1;
    int slot = 0;
    int calls_fd = -1;    ///< the supervisor's call table (CallGuard); -1: unguarded
    int channel_fd = -1;  ///< this worker's end of its slot's channel to the supervisor
  };
  std::optional<WorkerHandoff> handoff;
};

/// \brief The handoff a supervisor gave this process in its environment
/// (removed from it, so that the component's own subprocesses do not see it);
/// nullopt when this process is no such worker, kInvalidArgument when the
/// variable is malformed.
Result<std::optional<HttpServerOptions::WorkerHandoff>> TakeWorkerHandoff();

class HttpServer {
 public:
  /// \brief Binds and listens (kUnavailable naming the address when that fails).
  static Result<std::unique_ptr<HttpServer>> Start(const Runtime& runtime, const HttpServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// \brief The bound port (the chosen one when options.port was 0).
  uint16_t port() const;
  /// \brief Serves until Stop() or SIGINT/SIGTERM, then drains: the
  /// listening socket closes, idle keep-alive connections close, in-flight
  /// requests are answered (with `connection: close`), and GET /health?ready
  /// answers 503 meanwhile; returns when none is left. When drain_timeout
  /// passes with requests still inside an endpoint, the process exits with
  /// status 0 instead (an endpoint cannot be interrupted, and it would outlive
  /// this object). With worker processes, returns in the supervisor once every
  /// worker has drained (workers never return from it: they exit).
  void Run();
  /// \brief Asks Run() to drain and return; callable from any thread.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<HttpServer>> AdoptListener(std::unique_ptr<Impl> impl, int fd);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tesscpp::http
