// tesscpp: serve a component library over HTTP, print its OpenAPI document, or
// run one endpoint once from the shell — what `tesseract-runtime` does for a
// tesseract_api.py.
//
//   tesscpp serve build/examples/libvectoradd.so --port 8000
//   tesscpp apply build/examples/libvectoradd.so @inputs.json
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "http/server.h"
#include "tesscpp/component.h"
#include "tesscpp/component_library.h"
#include "tesscpp/runtime.h"

namespace {

using tesscpp::Result;
using tesscpp::Status;

struct CommonOptions {
  std::string library;
  std::optional<std::string> output_format;
  std::optional<std::string> output_path;
  std::optional<std::string> input_path;
  std::optional<std::string> output_file;
  bool debug = false;
};

void AddCommonOptions(CLI::App* command, CommonOptions& o) {
  command->add_option("component", o.library, "Component library (lib<name>.so)")->required();
  command->add_option("--output-format", o.output_format, "json, json+base64 or json+binref");
  command->add_option("--output-path", o.output_path, "Directory for run directories and binref outputs");
  command->add_option("--input-path", o.input_path, "Directory relative binref inputs are read from");
  command->add_flag("--debug", o.debug, "Tracebacks in 500 responses and the /test endpoint");
}

int Fail(const Status& status) {
  std::cerr << "tesscpp: " << status << "\n";
  return 1;
}

// The environment's TESSERACT_* settings with the command line on top, and the
// component they apply to.
Result<std::unique_ptr<tesscpp::Runtime>> MakeRuntime(
    const CommonOptions& o, std::shared_ptr<const tesscpp::ComponentLibrary>* library) {
  TESS_ASSIGN_OR_RETURN(tesscpp::RuntimeConfig config, tesscpp::RuntimeConfig::FromEnvironment());
  if (o.output_format) config.output_format = *o.output_format;
  if (o.output_path)
    config.output_path = std::filesystem::absolute(*o.output_path).lexically_normal().string();
  if (o.input_path) config.input_path = std::filesystem::absolute(*o.input_path).lexically_normal().string();
  if (o.output_file) config.output_file = *o.output_file;
  if (o.debug) config.debug = true;
  TESS_ASSIGN_OR_RETURN(*library, tesscpp::ComponentLibrary::Open(o.library));
  // The component lives as long as its library: share the library's lifetime.
  std::shared_ptr<const tesscpp::Component> component(*library, &(*library)->component());
  return tesscpp::Runtime::Make(std::move(component), std::move(config));
}

// A payload given as JSON text or as @path.
Result<std::string> ReadPayload(const std::string& arg) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::ifstream in(arg.substr(1), std::ios::binary);
  if (!in) return Status::NotFound("cannot read payload file '", arg.substr(1), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int RunOnce(const CommonOptions& o, const std::string& endpoint, const std::string& payload_arg) {
  std::shared_ptr<const tesscpp::ComponentLibrary> library;
  auto runtime = MakeRuntime(o, &library);
  if (!runtime.ok()) return Fail(runtime.status());
  tesscpp::RuntimeRequest request;
  request.target = "/" + endpoint;
  if (endpoint == "health" || endpoint == "openapi.json") {
    request.method = "GET";
  } else {
    request.method = "POST";
    auto payload = ReadPayload(payload_arg);
    if (!payload.ok()) return Fail(payload.status());
    request.body = tesscpp::Buffer::FromString(*std::move(payload));
    request.accept = "application/" + (*runtime)->config().output_format;
    request.content_type = "application/json";
  }
  const tesscpp::RuntimeResponse response = (*runtime)->Handle(request);
  const std::string_view body = response.body.string_view();
  if (response.status != 200) {
    std::cerr << "tesscpp: " << endpoint << " failed with HTTP status " << response.status << ":\n"
              << body << "\n";
    return 2;
  }
  const std::string& file = (*runtime)->config().output_file;
  if (!file.empty()) {
    const auto path = std::filesystem::path((*runtime)->config().output_path) / file;
    std::ofstream out(path, std::ios::binary);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!out) return Fail(Status::IoError("cannot write '", path.string(), "'"));
    return 0;
  }
  std::cout.write(body.data(), static_cast<std::streamsize>(body.size()));
  std::cout << std::endl;
  return 0;
}

int Serve(const CommonOptions& o, const tesscpp::HttpServerOptions& server_options) {
  std::shared_ptr<const tesscpp::ComponentLibrary> library;
  auto runtime = MakeRuntime(o, &library);
  if (!runtime.ok()) return Fail(runtime.status());
  auto server = tesscpp::HttpServer::Start(**runtime, server_options);
  if (!server.ok()) return Fail(server.status());
  std::cout << "tesscpp: serving " << library->component().name() << " on http://" << server_options.host
            << ":" << (*server)->port() << std::endl;
  (*server)->Run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tesscpp: serve and run Tesseract components written in C++"};
  app.require_subcommand(1);

  CommonOptions serve_options;
  tesscpp::HttpServerOptions server;
  int64_t max_body_mib = server.max_body_bytes >> 20;
  CLI::App* serve = app.add_subcommand("serve", "Serve a component over HTTP (like tesseract-runtime serve)");
  AddCommonOptions(serve, serve_options);
  serve->add_option("--host", server.host, "Address to listen on")->capture_default_str();
  serve->add_option("--port", server.port, "Port (0: any free port, printed at start)")
      ->capture_default_str();
  serve->add_option("--num-workers", server.num_workers, "Threads that run requests")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  serve->add_option("--max-body-mib", max_body_mib, "Largest request body accepted (413 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  int64_t keep_alive_s = server.keep_alive_timeout.count();
  serve
      ->add_option("--timeout-keep-alive", keep_alive_s,
                   "Seconds an idle connection stays open (as uvicorn's)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve->callback([&] {
    server.max_body_bytes = max_body_mib << 20;
    server.keep_alive_timeout = std::chrono::seconds(keep_alive_s);
    std::exit(Serve(serve_options, server));
  });

  CommonOptions openapi_options;
  CLI::App* openapi = app.add_subcommand("openapi", "Print the component's OpenAPI document");
  openapi->add_option("component", openapi_options.library, "Component library (lib<name>.so)")->required();
  openapi->add_flag("--debug", openapi_options.debug, "The document of a server in debug mode");
  openapi->callback([&] { std::exit(RunOnce(openapi_options, "openapi.json", "")); });

  // One subcommand per endpoint, dashes for underscores, as tesseract-runtime.
  struct OneShot {
    const char* command;
    const char* endpoint;
    CommonOptions options;
    std::string payload;
  };
  static std::vector<OneShot> one_shots = {
      {"apply", "apply", {}, ""},
      {"abstract-eval", "abstract_eval", {}, ""},
      {"jacobian", "jacobian", {}, ""},
      {"jacobian-vector-product", "jacobian_vector_product", {}, ""},
      {"vector-jacobian-product", "vector_jacobian_product", {}, ""},
      {"test", "test", {}, ""},
      {"health", "health", {}, ""},
  };
  for (OneShot& shot : one_shots) {
    CLI::App* command = app.add_subcommand(shot.command, std::string("Run ") + shot.endpoint + " once");
    AddCommonOptions(command, shot.options);
    command->add_option("--output-file", shot.options.output_file,
                        "Write the result to <output-path>/<file>");
    if (std::string_view(shot.endpoint) != "health") {
      command->add_option("payload", shot.payload, "Request body: JSON text or @file")->required();
    }
    command->callback([&shot] {
      if (std::string_view(shot.endpoint) == "test") shot.options.debug = true;
      std::exit(RunOnce(shot.options, shot.endpoint, shot.payload));
    });
  }

  CLI11_PARSE(app, argc, argv);
  return 0;
}
