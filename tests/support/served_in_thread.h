// served_in_thread.h: a Runtime served over HTTP by the unchanged server, on
// a free port of 127.0.0.1, from a thread of the test's own process (test
// support): for tests whose server needs something only the test has (a
// component or a transport written in it).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "tesscpp/internal/http/http_server.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"

namespace tesscpp::testing {

class ServedInThread {
 public:
  static Result<std::unique_ptr<ServedInThread>> Start(std::unique_ptr<Runtime> runtime) {
    std::unique_ptr<ServedInThread> served(new ServedInThread(std::move(runtime)));
    http::HttpServerOptions options;
    options.port = 0;
    TESS_ASSIGN_OR_RETURN(served->server_, http::HttpServer::Start(*served->runtime_, options));
    http::HttpServer* server = served->server_.get();
    served->serving_ = std::thread([server] { server->Run(); });
    return served;
  }
  ~ServedInThread() {
    server_->Stop();
    serving_.join();
  }
  ServedInThread(const ServedInThread&) = delete;
  ServedInThread& operator=(const ServedInThread&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  const Runtime& runtime() const { return *runtime_; }

 private:
  explicit ServedInThread(std::unique_ptr<Runtime> runtime) : runtime_(std::move(runtime)) {}

  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<http::HttpServer> server_;
  std::thread serving_;
};

}  // namespace tesscpp::testing
