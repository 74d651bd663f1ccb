// callback_server: serves the callback twin of vectoradd (src/runtime/
// callback_component.h) over HTTP with the unchanged runtime and server, for
// tests/conformance/test_second_component_kind.py.
//
//   callback_server <openapi.json> <output dir>
// prints "port <n>" once listening on 127.0.0.1 (a free port), then serves
// until SIGTERM.
#include <cstdio>
#include <iostream>

#include "support/callback_component.h"
#include "support/test_files.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/http/http_server.h"
#include "tesscpp/internal/runtime/runtime.h"

int main(int argc, char** argv) {
  using namespace tesscpp;  // NOLINT(google-build-using-namespace): a test program
  if (argc != 3) {
    std::cerr << "usage: callback_server <openapi.json> <output dir>\n";
    return 2;
  }
  auto document = ReadJson(testing::ReadFile(argv[1]));
  if (!document.ok()) {
    std::cerr << argv[1] << ": " << document.status().ToString() << "\n";
    return 1;
  }
  RuntimeConfig config;
  config.output_path = argv[2];
  config.debug = true;  // tracebacks and /test, for the suite to read
  auto runtime = Runtime::Make(runtime::CallbackVectoradd(*std::move(document)), config);
  if (!runtime.ok()) {
    std::cerr << runtime.status().ToString() << "\n";
    return 1;
  }
  http::HttpServerOptions options;
  options.port = 0;
  auto server = http::HttpServer::Start(**runtime, options);
  if (!server.ok()) {
    std::cerr << server.status().ToString() << "\n";
    return 1;
  }
  std::printf("port %u\n", static_cast<unsigned>((*server)->port()));
  std::fflush(stdout);
  (*server)->Run();
  return 0;
}
