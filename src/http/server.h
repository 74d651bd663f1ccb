// server.h: the HTTP/1.1 server in front of a Runtime (Boost.Beast; this
// header keeps Beast out of its includers).
//
// num_workers + 1 threads share one event loop; a request is handled on the
// thread that read it, so a long endpoint occupies one thread while the
// others keep serving /health and other connections. Bodies are read
// straight into pooled, padded buffers with large reads (the JSON parser then
// works in place), responses are written from the encoder's buffer with one
// gathered write.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tesscpp/result.h"

namespace tesscpp {

class Runtime;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  ///< 0: any free port (see HttpServer::port())
  int num_workers = 1;   ///< requests handled at once (threads: one more)
  /// Larger request bodies get 413 before any byte of them is read.
  int64_t max_body_bytes = int64_t{4} << 30;
  /// An idle keep-alive connection is closed after this (uvicorn's is 60 s).
  std::chrono::seconds keep_alive_timeout{60};
  /// The whole body must arrive within this.
  std::chrono::seconds body_timeout{600};
};

class HttpServer {
 public:
  /// \brief Binds and listens (kUnavailable naming the address when that fails).
  static Result<std::unique_ptr<HttpServer>> Start(const Runtime& runtime, const HttpServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// \brief The bound port (the chosen one when options.port was 0).
  uint16_t port() const;
  /// \brief Serves until Stop() or SIGINT/SIGTERM; returns after in-flight
  /// requests finished and the workers stopped.
  void Run();
  /// \brief Asks Run() to return; callable from any thread.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tesscpp
