#include "command_context.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "python_module.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/client/mlflow_runs.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/component_kind.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/loader/component_library.h"
#include "tesscpp/internal/runtime/served_component.h"

namespace tesscpp::cli {

namespace core = tesscpp::core;

int Fail(const Status& status) {
  std::cerr << "tesscpp: " << status << "\n";
  return 1;
}

Process& ThisProcess() {
  static Process process;
  return process;
}

Result<Opened> OpenComponent(const CommonOptions& o) {
  TESS_ASSIGN_OR_RETURN(tesscpp::RuntimeConfig config, tesscpp::RuntimeConfig::FromEnvironment());
  if (o.output_format) config.output_format = *o.output_format;
  if (o.output_path)
    config.output_path = std::filesystem::absolute(*o.output_path).lexically_normal().string();
  if (o.input_path) config.input_path = std::filesystem::absolute(*o.input_path).lexically_normal().string();
  if (o.output_file) config.output_file = *o.output_file;
  config.one_shot = o.one_shot;
  if (o.debug) config.debug = true;
  if (o.gpu_transport) config.gpu_transport = *o.gpu_transport;
  Opened opened;
  if (core::ComponentKindOf(o.library) == core::ComponentKind::kPythonModule) {
    const Process& process = ThisProcess();
    if (process.host == nullptr) return ExecPythonHost(process.argc, process.argv);
    // Before the module is imported under them (Runtime::Make checks again).
    TESS_RETURN_IF_ERROR(config.Validate());
    TESS_ASSIGN_OR_RETURN(std::shared_ptr<const tesscpp::ServedComponent> module,
                          process.host->open_module(o.library, config));
    opened.name = module->name();
    opened.forkable = module->Forkable();
    // A module's endpoints log through tesseract-core (TracksRunsItself).
    TESS_ASSIGN_OR_RETURN(opened.runtime, tesscpp::Runtime::Make(std::move(module), std::move(config)));
    return opened;
  }
  std::shared_ptr<const tesscpp::ComponentLibrary> library;
  TESS_ASSIGN_OR_RETURN(library, tesscpp::ComponentLibrary::Open(o.library));
  opened.name = library->component().name();
  // The component lives as long as its library: share the library's lifetime.
  const tesscpp::Component* held = &library->component();
  std::shared_ptr<const tesscpp::Component> component(std::move(library), held);
  TESS_ASSIGN_OR_RETURN(tesscpp::component::RunLoggerFactory mlflow_runs,
                        tesscpp::client::MlflowRunLoggers(config));
  TESS_ASSIGN_OR_RETURN(opened.runtime, tesscpp::cpp_kind::MakeRuntime(
                                            std::move(component), std::move(config), std::move(mlflow_runs)));
  return opened;
}

Status ResolveComponent(std::string& component, std::string* payload) {
  // Named by the environment: TESSCPP_COMPONENT, else TESSERACT_API_PATH (as
  // tesseract-runtime finds its module). Then a command's one positional
  // argument is its payload: `tesseract-runtime apply @payload.json`.
  std::string from_env;
  for (const char* variable : {"TESSCPP_COMPONENT", "TESSERACT_API_PATH"}) {
    const char* value = std::getenv(variable);
    if (from_env.empty() && value != nullptr) from_env = value;
  }
  if (payload != nullptr && payload->empty() && !from_env.empty()) *payload = std::exchange(component, "");
  if (component.empty()) component = from_env;
  if (component.empty()) {
    return Status::InvalidArgument("no component: name it, or set TESSCPP_COMPONENT or TESSERACT_API_PATH");
  }
  if (payload != nullptr && payload->empty()) {
    return Status::InvalidArgument("no payload: give the request body as JSON text or @file");
  }
  return Status::OK();
}

Result<std::string> ReadToken(const std::string& file) {
  std::string token;
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::NotFound("cannot read the token file '", file, "'");
    std::getline(in, token);
  } else if (const char* env = std::getenv("TESSERACT_API_TOKEN"); env != nullptr) {
    token = env;
  }
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (!file.empty() && token.empty()) return Status::InvalidArgument("the token file '", file, "' is empty");
  return token;
}

Result<std::string> ReadPayload(const std::string& arg) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::ifstream in(arg.substr(1), std::ios::binary);
  if (!in) return Status::NotFound("cannot read payload file '", arg.substr(1), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<tesscpp::Value> ReadClientPayload(const std::string& arg) {
  TESS_ASSIGN_OR_RETURN(std::string text, ReadPayload(arg));
  tesscpp::JsonReadOptions read;
  read.arrays = tesscpp::ArrayDetection::kShaped;
  auto parsed = tesscpp::ReadJson(text, read);
  if (!parsed.ok()) return parsed.status().WithContext("payload");
  return parsed;
}

}  // namespace tesscpp::cli
