// The tesscpp commands (cli.h): serve a component library or a
// tesseract_api.py over HTTP, print its OpenAPI document, run one endpoint
// once from the shell — what `tesseract-runtime` does for a tesseract_api.py —
// or call any served Tesseract.
//
//   tesscpp serve build/examples/libvectoradd.so --port 8000
//   tesscpp serve tesseract_api.py --num-workers 4
//   tesscpp apply build/examples/libvectoradd.so @inputs.json
//   tesscpp call http://127.0.0.1:8000 apply @payload.json --output-format json+base64
//   tesscpp check-gradients build/examples/libunivariate.so '{"inputs": {"x": 1.5, "y": 2.0}}'
//   tesscpp init my_model --dir ~/my_model
#include <unistd.h>

// GCC 12 flags a null dereference inside CLI11's string splitting once it is
// inlined into the option parsing here (a false positive of -Wnull-dereference
// on std::vector's relocation, not CLI11 code that can fail).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "cli.h"
#include "gradient_report.h"
#include "image_build.h"
#include "image_run.h"
#include "init_project.h"
#include "python_module.h"
#include "runtime_options.h"
#include "tesscpp/client.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/gradient_check.h"
#include "tesscpp/internal/component_kind.h"
#include "tesscpp/internal/component_library.h"
#include "tesscpp/internal/cpp_kind.h"
#include "tesscpp/internal/endpoint_table.h"
#include "tesscpp/internal/http_server.h"
#include "tesscpp/internal/json.h"
#include "tesscpp/internal/mlflow_runs.h"
#include "tesscpp/internal/runtime.h"
#include "tesscpp/internal/served_component.h"

namespace tesscpp::cli {
namespace {

namespace core = tesscpp::core;
using tesscpp::Result;
using tesscpp::Status;

struct CommonOptions {
  std::string library;
  std::optional<std::string> output_format;
  std::optional<std::string> output_path;
  std::optional<std::string> input_path;
  std::optional<std::string> output_file;
  std::optional<std::string> gpu_transport;
  bool debug = false;
  bool one_shot = false;  // a one-shot endpoint command (RuntimeConfig::one_shot)
};

void AddCommonOptions(CLI::App* command, CommonOptions& o) {
  command->add_option("component", o.library,
                      "Component library (lib<name>.so) or tesseract_api.py; default $TESSCPP_COMPONENT, "
                      "else $TESSERACT_API_PATH");
  command->add_option("--output-format", o.output_format, OutputFormatChoices(NameList::kPlain));
  command->add_option("--output-path", o.output_path, "Directory for run directories and binref outputs");
  command->add_option("--input-path", o.input_path, "Directory relative binref inputs are read from");
  command->add_option(
      "--gpu-transport", o.gpu_transport,
      GpuTransportChoices(NameList::kPlain) + ": how CUDA arrays go in and out (TESSERACT_GPU_TRANSPORT)");
  command->add_flag("--debug", o.debug, "Tracebacks in 500 responses and the /test endpoint");
}

int Fail(const Status& status) {
  std::cerr << "tesscpp: " << status << "\n";
  return 1;
}

// What a command serves: its runtime, the component's name, and whatever
// keeps the component alive (its library).
struct Opened {
  std::string name;
  std::unique_ptr<tesscpp::Runtime> runtime;
  Status forkable;  // ServedComponent::Forkable of what is served
};

// The process's argv, for handing a Python module's command to Python, and
// the Python host when this process is one.
struct Process {
  int argc = 0;
  char** argv = nullptr;
  const PythonHost* host = nullptr;
};
Process& ThisProcess() {
  static Process process;
  return process;
}

// The environment's TESSERACT_* settings with the command line on top, and the
// component they apply to: a library loaded here, or a tesseract_api.py opened
// by the Python host (this command is handed to one first when there is none).
Result<Opened> MakeRuntime(const CommonOptions& o) {
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

// An image names its component once, in its environment (TESSCPP_COMPONENT),
// so that `<image> serve --port 8000 ...` (as tesseract-core starts
// containers) and `<image> apply @in.json` need no path: with it set, a
// command given one positional where it takes a component and a payload
// reads that one as the payload. `payload` is null for commands without one.
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

// A bearer token: the first line of `file`, else $TESSERACT_API_TOKEN, else
// none. Never an argument: the command lines of processes are public (ps).
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
  auto opened = MakeRuntime(o);
  if (!opened.ok()) return Fail(opened.status());
  const auto& runtime = opened->runtime;
  tesscpp::RuntimeRequest request;
  request.target = "/" + endpoint;
  if (endpoint == "health" || endpoint == "openapi.json") {
    request.method = "GET";
    if (Status logs = runtime->MakeOneShotLogs(); !logs.ok()) return Fail(logs);
  } else {
    request.method = "POST";
    auto payload = ReadPayload(payload_arg);
    if (!payload.ok()) return Fail(payload.status());
    request.body = tesscpp::Buffer::FromString(*std::move(payload));
    request.accept = "application/" + runtime->config().output_format;
    request.content_type = "application/json";
    // As tesseract-runtime: the output directory is made, and the call's
    // logs/ go into it.
    std::error_code ec;
    std::filesystem::create_directories(runtime->config().output_path, ec);
  }
  const tesscpp::RuntimeResponse response = runtime->Handle(request);
  // tesseract-runtime streams the run's log to stderr as well.
  if (const auto log = std::filesystem::path(runtime->config().output_path) / "logs" / "tesseract.log";
      request.method == "POST" && std::filesystem::exists(log)) {
    std::ifstream text(log, std::ios::binary);
    std::cerr << text.rdbuf();
  }
  const std::string_view body = response.body.string_view();
  if (response.status != 200) {
    std::cerr << "tesscpp: " << endpoint << " failed with HTTP status " << response.status << ":\n"
              << body << "\n";
    return 2;
  }
  const std::string& file = runtime->config().output_file;
  if (!file.empty()) {
    const auto path = std::filesystem::path(runtime->config().output_path) / file;
    std::ofstream out(path, std::ios::binary);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!out) return Fail(Status::IoError("cannot write '", path.string(), "'"));
    return 0;
  }
  // The bytes alone, as tesseract-runtime writes them (no newline after).
  std::cout.write(body.data(), static_cast<std::streamsize>(body.size()));
  std::cout.flush();
  return 0;
}

// Workers are forks of this process, unless the component cannot be forked
// (threads its set-up started) or the GPU transport is on (this process may
// have initialised CUDA, which a fork cannot use): then they are fresh
// processes running this same command (a worker_command), through the
// Python host's command or this executable; fails with why they cannot be
// forked when there is no such command.
Status ChooseWorkerStart(const Opened& opened, tesscpp::http::HttpServerOptions& server_options) {
  const Process& process = ThisProcess();
  if (process.host != nullptr) server_options.fork_hooks = process.host->fork_hooks;
  const bool workers = server_options.num_workers > 1 || server_options.supervise;
  const bool gpu = opened.runtime->config().gpu_transport != "none";
  if (!workers || (opened.forkable.ok() && !gpu)) return Status::OK();
  std::vector<std::string> command;
  if (process.host != nullptr) {
    command = process.host->command;
  } else {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) command = {self.string()};
  }
  if (command.empty()) {
    if (!opened.forkable.ok()) return opened.forkable;
    return Status::Unavailable("cannot start fresh worker processes for gpu_transport='",
                               opened.runtime->config().gpu_transport, "' (serve with --no-supervise)");
  }
  command.insert(command.end(), process.argv + 1, process.argv + process.argc);
  server_options.worker_command = std::move(command);
  return Status::OK();
}

int Serve(const CommonOptions& o, tesscpp::http::HttpServerOptions server_options) {
  // Before the component is set up: its subprocesses must not see it.
  auto handoff = tesscpp::http::TakeWorkerHandoff();
  if (!handoff.ok()) return Fail(handoff.status());
  if (*handoff) {  // a worker its supervisor exec'd: serves as one process
    server_options.handoff = **handoff;
    server_options.num_workers = 1;
    server_options.supervise = false;
  }
  auto opened = MakeRuntime(o);
  if (!opened.ok()) return Fail(opened.status());
  const tesscpp::Runtime& runtime = *opened->runtime;
  if (Status workers = ChooseWorkerStart(*opened, server_options); !workers.ok()) return Fail(workers);
  const std::string& transport = runtime.config().gpu_transport;
  if (transport != "none" && server_options.num_workers > 1) {
    // Exports of clients that never acknowledge are freed at the next call,
    // which is only safe when calls come one at a time.
    return Fail(Status::InvalidArgument(
        "gpu_transport='", transport,
        "' cannot be served by more than one worker (got num_workers=", server_options.num_workers, ")."));
  }
  // Where requests are served: a supervisor of fresh workers leaves CUDA to them.
  if (transport != "none" && server_options.worker_command.empty()) {
    if (Status cuda = tesscpp::cuda::CheckAvailable(); !cuda.ok()) {
      std::cerr << "tesscpp: warning: gpu_transport='" << transport
                << "' is enabled, but GPU arrays cannot be read here: " << cuda.message() << "\n";
    }
  }
  auto server = tesscpp::http::HttpServer::Start(runtime, server_options);
  if (!server.ok()) return Fail(server.status());
  // One line per server: its supervisor's. Written at once: with stdout
  // unbuffered (PYTHONUNBUFFERED, for a Python module) each `<<` is a write
  // of its own, and a client reading the log between two of them would see
  // a cut URL.
  if (!server_options.handoff) {
    const std::string line = "tesscpp: serving " + opened->name + " on http://" + server_options.host + ":" +
                             std::to_string((*server)->port()) + "\n";
    std::cout << line << std::flush;
  }
  (*server)->Run();
  return 0;
}

struct CallOptions {
  std::string url;
  std::string endpoint;
  std::string payload;
  tesscpp::ClientOptions client;
  std::optional<std::string> run_id;
  std::string print_arrays = "auto";
};

// Whether the floats of a host array all have a JSON spelling (JSON has none
// for inf and nan, which would print as null). Device arrays are not read.
bool AllFinite(const tesscpp::Tensor& t) {
  if (t.device().type != tesscpp::DeviceType::kCPU) return false;
  const int64_t n = t.num_elements();
  auto finite = [](const auto* values, int64_t count) {
    return std::all_of(values, values + count, [](auto x) { return std::isfinite(x); });
  };
  switch (t.dtype()) {
    case tesscpp::Dtype::kFloat16:  // all-ones exponent: inf or nan
      return std::none_of(t.data_as<const uint16_t>(), t.data_as<const uint16_t>() + n,
                          [](uint16_t h) { return (h & 0x7C00) == 0x7C00; });
    case tesscpp::Dtype::kFloat32: return finite(t.data_as<const float>(), n);
    case tesscpp::Dtype::kComplex64: return finite(t.data_as<const float>(), 2 * n);
    case tesscpp::Dtype::kFloat64: return finite(t.data_as<const double>(), n);
    case tesscpp::Dtype::kComplex128: return finite(t.data_as<const double>(), 2 * n);
    default: return true;
  }
}

// Whether every array in `v` prints as a JSON list without loss.
bool PrintsLosslesslyAsJson(const tesscpp::Value& v) {
  if (v.is_tensor()) return AllFinite(v.as_tensor());
  if (v.is_list()) {
    return std::all_of(v.as_list().begin(), v.as_list().end(), PrintsLosslesslyAsJson);
  }
  if (v.is_dict()) {
    return std::all_of(v.as_dict().begin(), v.as_dict().end(),
                       [](const auto& item) { return PrintsLosslesslyAsJson(item.second); });
  }
  return true;
}

// The names `tesscpp call` takes: the endpoints and "openapi".
std::string CallableEndpoints() {
  std::string names;
  for (const core::EndpointInfo& e : core::Endpoints()) names += std::string(e.name) + ", ";
  return names + "openapi";
}

// `tesscpp call`'s request, sent through the client's method for it.
Result<tesscpp::Value> CallEndpoint(const tesscpp::Tesseract& t, const CallOptions& o,
                                    const tesscpp::Value& p) {
  const std::string& e = o.endpoint;
  if (e == "openapi" || e == "openapi.json") return t.OpenApiSchema();
  const std::optional<core::EndpointId> id = core::FindEndpoint(e);
  if (!id) return Status::InvalidArgument("unknown endpoint '", e, "' (", CallableEndpoints(), ")");
  if (*id == core::EndpointId::kHealth) return t.Health();
  if (*id == core::EndpointId::kTest) {
    TESS_ASSIGN_OR_RETURN(tesscpp::TestOutcome outcome, t.Test(p));
    return tesscpp::Value::Dict{{"status", tesscpp::Value(outcome.status)},
                                {"message", tesscpp::Value(outcome.message)}};
  }
  // Every component endpoint, present and future: the request as it is.
  return t.Call(e, p, o.run_id);
}

// A payload for the client: arraydicts in it become tensors, which the client
// encodes as asked.
Result<tesscpp::Value> ReadClientPayload(const std::string& arg) {
  TESS_ASSIGN_OR_RETURN(std::string text, ReadPayload(arg));
  tesscpp::JsonReadOptions read;
  read.arrays = tesscpp::ArrayDetection::kShaped;
  auto parsed = tesscpp::ReadJson(text, read);
  if (!parsed.ok()) return parsed.status().WithContext("payload");
  return parsed;
}

int Call(const CallOptions& o) {
  tesscpp::Value payload;
  if (!o.payload.empty()) {
    auto parsed = ReadClientPayload(o.payload);
    if (!parsed.ok()) return Fail(parsed.status());
    payload = *std::move(parsed);
  }
  auto tesseract = tesscpp::Tesseract::FromUrl(o.url, o.client);
  if (!tesseract.ok()) return Fail(tesseract.status());
  auto result = CallEndpoint(*tesseract, o, payload);
  if (!result.ok()) {
    std::cerr << "tesscpp: " << o.endpoint << " failed: " << result.status().message() << "\n";
    return 2;
  }
  tesscpp::JsonWriteOptions write;
  // auto: lists where they are lossless, base64 (exact) as soon as one is not.
  if (o.print_arrays == "base64" || (o.print_arrays == "auto" && !PrintsLosslesslyAsJson(*result))) {
    write.arrays.encoding = tesscpp::ArrayEncoding::kBase64;
  }
  auto text = tesscpp::WriteJson(*result, write);
  if (!text.ok()) return Fail(text.status());
  std::cout.write(reinterpret_cast<const char*>(text->data()), static_cast<std::streamsize>(text->size()));
  std::cout << std::endl;
  return 0;
}

struct CheckGradientsOptions {
  std::string target;
  std::string payload;
  tesscpp::GradientCheckOptions check;
  std::vector<std::string> eps_for;
  std::optional<int64_t> seed;
  int64_t max_failures = 10;
  bool show_progress = true;
};

// The Tesseract a command names: a URL, a tesseract_api.py (served by
// `tesscpp serve`) or a component library (loaded in-process).
Result<tesscpp::Tesseract> Target(const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) {
    return tesscpp::Tesseract::FromUrl(target);
  }
  if (core::ComponentKindOf(target) == core::ComponentKind::kPythonModule) {
    return tesscpp::Tesseract::FromSource(target);
  }
  return tesscpp::Tesseract::FromLibrary(target);
}

Result<std::map<std::string, double>> ParseEpsFor(const std::vector<std::string>& items) {
  std::map<std::string, double> steps;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--eps-for '", item, "': expected PATH=VALUE");
    }
    double step = 0;
    const char* end = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(item.data() + eq + 1, end, step);
    if (ec != std::errc() || ptr != end) {
      return Status::InvalidArgument("--eps-for '", item, "': '", item.substr(eq + 1), "' is not a number");
    }
    steps[item.substr(0, eq)] = step;
  }
  return steps;
}

// Exit status: 0 every check passed, 1 some failed, 2 the check could not run.
int CheckGradients(CheckGradientsOptions o) {
  const auto fail = [](const Status& status) {
    Fail(status);
    return 2;
  };
  auto steps = ParseEpsFor(o.eps_for);
  if (!steps.ok()) return fail(steps.status());
  o.check.eps_for = *std::move(steps);
  if (o.seed) o.check.seed = static_cast<uint64_t>(*o.seed);
  auto payload = ReadClientPayload(o.payload);
  if (!payload.ok()) return fail(payload.status());
  auto tesseract = Target(o.target);
  if (!tesseract.ok()) return fail(tesseract.status());
  // Progress only where someone watches: a terminal on stderr.
  const bool live = o.show_progress && ::isatty(STDERR_FILENO) == 1;
  tesscpp::GradientCheckProgress progress;
  if (live) {
    progress = [](const std::string& endpoint, int64_t done, int64_t total) {
      std::cerr << "\rChecking gradients for " << endpoint << "... " << done << "/" << total
                << (done == total ? "\r\033[K" : "") << std::flush;
    };
  }
  auto results = tesscpp::CheckGradients(*tesseract, *payload, o.check, progress);
  if (!results.ok()) return fail(results.status());
  return tesscpp::cli::PrintGradientReport(*results, o.max_failures, std::cout) ? 0 : 1;
}

// serve: the server's flags, each with tesseract-runtime's variable where it has one.
void AddServeCommand(CLI::App& app) {
  struct Options {
    CommonOptions common;
    tesscpp::http::HttpServerOptions server;
    int64_t max_body_mib = server.max_body_bytes >> 20;
    int64_t body_budget_mib = -1;
    std::string token_file;
    int64_t drain_s = server.drain_timeout.count();
    int64_t keep_alive_s = server.keep_alive_timeout.count();
  };
  auto o = std::make_shared<Options>();  // held by the callback, as long as the app
  CLI::App* serve = app.add_subcommand("serve", "Serve a component over HTTP (like tesseract-runtime serve)");
  AddCommonOptions(serve, o->common);
  serve->add_option("--host", o->server.host, "Address or host name to listen on")
      ->envname("TESSERACT_RUNTIME_SERVE_HOST")
      ->capture_default_str();
  serve->add_option("--port", o->server.port, "Port (0: any free port, printed at start)")
      ->envname("TESSERACT_RUNTIME_SERVE_PORT")
      ->capture_default_str();
  serve
      ->add_option("--num-workers", o->server.num_workers,
                   "Worker processes: requests handled at once (as tesseract-runtime's)")
      ->envname("TESSERACT_NUM_WORKERS")
      ->check(CLI::Range(0, 1024))  // 0 serves as 1, as uvicorn's workers=0 does
      ->capture_default_str();
  serve
      ->add_option("--max-in-flight", o->server.max_in_flight,
                   "Requests in flight per worker before 503 + Retry-After (0: no cap)")
      ->envname("TESSERACT_MAX_IN_FLIGHT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option("--body-budget-mib", o->body_budget_mib,
                   "Declared body MiB in flight per worker before 503 + Retry-After (0: none; "
                   "default a quarter of memory)")
      ->envname("TESSERACT_BODY_BUDGET_MIB");
  serve
      ->add_option("--token-file", o->token_file,
                   "Require 'Authorization: Bearer <token>', the token read from this file "
                   "(or TESSERACT_API_TOKEN; never on the command line)")
      ->envname("TESSERACT_API_TOKEN_FILE");
  serve->add_flag("--public-health", o->server.public_health, "With a token: answer GET /health without it")
      ->envname("TESSERACT_PUBLIC_HEALTH");
  serve->add_flag("--access-log", o->server.access_log, "One JSON line per request on stderr")
      ->envname("TESSERACT_ACCESS_LOG");
  o->server.supervise = true;
  serve
      ->add_flag("--supervise,!--no-supervise", o->server.supervise,
                 "Serve from supervised worker processes, even one: a worker that crashes costs only the "
                 "calls it was computing (answered 500) and is replaced; --no-supervise serves in this "
                 "process, where a crash ends the server")
      ->envname("TESSCPP_SUPERVISE")
      ->capture_default_str();
  serve->add_option("--drain-timeout", o->drain_s, "Seconds in-flight requests get to finish after SIGTERM")
      ->envname("TESSERACT_DRAIN_TIMEOUT")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve->add_option("--max-body-mib", o->max_body_mib, "Largest request body accepted (413 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--timeout-keep-alive", o->keep_alive_s,
                   "Seconds an idle connection stays open (as uvicorn's)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve->callback([o] {
    if (Status named = ResolveComponent(o->common.library, nullptr); !named.ok()) std::exit(Fail(named));
    o->server.num_workers = std::max(o->server.num_workers, 1);
    o->server.max_body_bytes = o->max_body_mib << 20;
    o->server.keep_alive_timeout = std::chrono::seconds(o->keep_alive_s);
    o->server.body_budget_bytes = o->body_budget_mib < 0 ? -1 : o->body_budget_mib << 20;
    auto token = ReadToken(o->token_file);
    if (!token.ok()) std::exit(Fail(token.status()));
    o->server.token = *std::move(token);
    o->server.drain_timeout = std::chrono::seconds(o->drain_s);
    std::exit(Serve(o->common, o->server));
  });
}

// openapi, and one command per endpoint (dashes for underscores, as tesseract-runtime).
void AddEndpointCommands(CLI::App& app) {
  auto openapi_options = std::make_shared<CommonOptions>();
  CLI::App* openapi = app.add_subcommand("openapi", "Print the component's OpenAPI document");
  openapi->alias("openapi-schema");  // tesseract-runtime's name
  openapi->add_option("component", openapi_options->library,
                      "Component library (lib<name>.so); default $TESSCPP_COMPONENT");
  openapi->add_flag("--debug", openapi_options->debug, "The document of a server in debug mode");
  openapi->callback([openapi_options] {
    if (Status named = ResolveComponent(openapi_options->library, nullptr); !named.ok())
      std::exit(Fail(named));
    std::exit(RunOnce(*openapi_options, "openapi.json", ""));
  });

  struct OneShot {
    const core::EndpointInfo* endpoint;
    CommonOptions options;
    std::string payload;
  };
  for (const core::EndpointInfo& e : core::Endpoints()) {
    auto shot = std::make_shared<OneShot>(OneShot{&e, {}, ""});  // held by the callback
    const std::string name(e.name);
    const bool takes_payload = e.method == "POST";
    CLI::App* command = app.add_subcommand(std::string(e.command), "Run " + name + " once");
    AddCommonOptions(command, shot->options);
    command->add_option("--output-file", shot->options.output_file,
                        "Write the result to <output-path>/<file>");
    if (takes_payload) command->add_option("payload", shot->payload, "Request body: JSON text or @file");
    command->callback([shot, name, takes_payload] {
      if (Status named = ResolveComponent(shot->options.library, takes_payload ? &shot->payload : nullptr);
          !named.ok()) {
        std::exit(Fail(named) + 1);  // a usage error, as a missing argument is
      }
      if (shot->endpoint->id == core::EndpointId::kTest) shot->options.debug = true;
      shot->options.one_shot = true;
      std::exit(RunOnce(shot->options, name, shot->payload));
    });
  }
}

// call: any served Tesseract through the client.
void AddCallCommand(CLI::App& app) {
  struct Options {
    CallOptions call;
    std::string token_file;
  };
  auto o = std::make_shared<Options>();
  CLI::App* call =
      app.add_subcommand("call", "Call an endpoint of any served Tesseract (tesscpp or tesseract-core)");
  call->add_option("url", o->call.url, "The Tesseract's URL, e.g. http://127.0.0.1:8000")->required();
  call->add_option("endpoint", o->call.endpoint, CallableEndpoints())->required();
  call->add_option("payload", o->call.payload, "Request body: JSON text or @file (none for health, openapi)");
  tesscpp::RequestedEncoding& encoding = o->call.client.encoding;
  call->add_option("--output-format", encoding.output_format, OutputFormatChoices(NameList::kPlain));
  call->add_option("--compression", encoding.compression, CompressionChoices(NameList::kPlain));
  call->add_option("--gpu-transport", encoding.gpu_transport,
                   GpuTransportChoices(NameList::kPlain) + ": how CUDA arrays go in and out");
  call->add_option("--server-output-path", o->call.client.server_output_path,
                   "The server's output directory, as seen here (json+binref outputs)");
  call->add_option("--server-input-path", o->call.client.server_input_path,
                   "The server's input directory, as seen here (json+binref inputs)");
  call->add_option("--run-id", o->call.run_id, "Name of the run directory (run_<id>)");
  call->add_option("--connect-timeout", o->call.client.connect_timeout_s, "Seconds")->capture_default_str();
  call->add_option("--token-file", o->token_file,
                   "Send 'Authorization: Bearer <token>' read from this file (or TESSERACT_API_TOKEN)")
      ->envname("TESSERACT_API_TOKEN_FILE");
  call->add_option("--read-timeout", o->call.client.read_timeout_s,
                   "Seconds of silence allowed (0: no limit)")
      ->capture_default_str();
  call->add_option("--print-arrays", o->call.print_arrays,
                   "Arrays in the printed result: json (lists; inf and nan print as null), base64 "
                   "(exact), or auto (lists unless an array holds inf or nan, then base64)")
      ->check(CLI::IsMember({"auto", "json", "base64"}))
      ->capture_default_str();
  call->callback([o] {
    auto token = ReadToken(o->token_file);
    if (!token.ok()) std::exit(Fail(token.status()));
    o->call.client.token = *std::move(token);
    std::exit(Call(o->call));
  });
}

// build: an image of a component (docs/containers.md).
void AddBuildCommand(CLI::App& app) {
  auto image = std::make_shared<tesscpp::cli::ImageBuildOptions>();
  CLI::App* build =
      app.add_subcommand("build", "Build a container image of a component (docs/containers.md)");
  build
      ->add_option("component", image->component,
                   "Component library (lib<name>.so), a component project folder to build first, or a "
                   "folder with tesseract_api.py and tesseract_config.yaml (a Python module)")
      ->required();
  build->add_option("--tag", image->tag, "Image tag (default <name>:<version>)");
  build->add_option("--name", image->name, "TESSERACT_NAME (default the component's or the config's name)");
  build->add_option("--version", image->version,
                    "TESSERACT_VERSION (default the component's or the config's version)");
  build->callback([image] {
    std::error_code ec;
    image->cli = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    auto tag = tesscpp::cli::BuildImage(*image);
    if (!tag.ok()) std::exit(Fail(tag.status()));
    std::cout << "tesscpp: built image " << *tag << "\n";
    std::exit(0);
  });
}

// run: one command of an image in a container removed afterwards.
void AddRunCommand(CLI::App& app) {
  auto run_options = std::make_shared<tesscpp::cli::ImageRunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Run one command of a Tesseract image in a container removed afterwards (tesseract run)");
  run->add_option("--volume,-v", run_options->volumes, "source:target[:ro|rw] (read-only unless rw)");
  run->add_option("--input-path", run_options->input_path, "Mounted read-only at /tesseract/input_data");
  run->add_option("--output-path", run_options->output_path, "Mounted at /tesseract/output_data");
  run->add_option("--env,-e", run_options->env, "KEY=value in the container's environment");
  run->add_option("--gpus", run_options->gpus, "GPUs for the container: all, or device ids");
  run->add_option("--user", run_options->user, "uid[:gid] (default: yours)");
  run->add_option("--network", run_options->network, "Network to join");
  // IMAGE COMMAND [ARGS...]: everything from the image on goes to the
  // container, options of the command included.
  run->prefix_command();
  run->footer("Usage: tesscpp run [OPTIONS] IMAGE COMMAND [ARGS...]; @file arguments are mounted.");
  run->callback([run, run_options] {
    std::vector<std::string> rest = run->remaining();
    if (rest.size() < 2) {
      std::cerr << "tesscpp run: give an image and a command, e.g. tesscpp run IMAGE apply @in.json\n";
      std::exit(2);
    }
    run_options->image = rest.front();
    run_options->command.assign(rest.begin() + 1, rest.end());
    auto code = tesscpp::cli::RunImage(*run_options);
    if (!code.ok()) std::exit(Fail(code.status()));
    std::exit(*code);
  });
}

// init: a new component project.
void AddInitCommand(CLI::App& app) {
  struct Options {
    std::string name;
    std::string dir;
    bool force = false;
    std::string template_name = "derived";
  };
  auto o = std::make_shared<Options>();
  CLI::App* init =
      app.add_subcommand("init", "Write a new component project (CMake, source, TestSpec, README)");
  init->add_option("name", o->name, "The component's name (letters, digits, '_', '-')")->required();
  init->add_option("--dir", o->dir, "Where to write it (default: ./<name>)");
  init->add_flag("--force", o->force, "Write into an existing directory");
  init->add_option("--template", o->template_name,
                   "derived: apply written once, derivatives derived (needs ADOL-C and Sacado); array: "
                   "apply written once over arrays, derivatives derived (needs Dr.Jit); explicit: apply "
                   "and a hand-written VJP")
      ->capture_default_str();
  init->callback([o] {
    const std::string dir = o->dir.empty() ? o->name : o->dir;
    auto kind = tesscpp::cli::ProjectTemplateFromName(o->template_name);
    if (!kind.ok()) std::exit(Fail(kind.status().WithContext("--template")));
    if (Status written = tesscpp::cli::InitProject(o->name, dir, o->force, *kind); !written.ok())
      std::exit(Fail(written));
    std::cout << "tesscpp: wrote the component project " << o->name << " to " << dir
              << " (see its README.md)\n";
    std::exit(0);
  });
}

// check-gradients: tesseract-runtime check-gradients' options, and its environment variables.
void AddCheckGradientsCommand(CLI::App& app) {
  auto gradients = std::make_shared<CheckGradientsOptions>();
  CLI::App* check = app.add_subcommand(
      "check-gradients", "Compare jacobian, JVP and VJP with central finite differences of apply");
  const auto env = [](const char* name) { return std::string("TESSERACT_RUNTIME_CHECK_GRADIENTS_") + name; };
  check->add_option("tesseract", gradients->target,
                    "Component library, tesseract_api.py or URL (default: $TESSCPP_COMPONENT)");
  check->add_option("payload", gradients->payload,
                    "The apply request, {\"inputs\": ...}: JSON text or @file");
  check
      ->add_option("--input-paths", gradients->check.input_paths,
                   "Differentiable inputs to check (default: all)")
      ->envname(env("INPUT_PATHS"));
  check
      ->add_option("--output-paths", gradients->check.output_paths,
                   "Differentiable outputs to check (default: all)")
      ->envname(env("OUTPUT_PATHS"));
  check->add_option("--endpoints", gradients->check.endpoints, "Endpoints to check (default: all there are)")
      ->envname(env("ENDPOINTS"));
  check->add_option("--eps", gradients->check.eps, "Absolute finite-difference step")
      ->envname(env("EPS"))
      ->capture_default_str();
  check->add_option("--eps-for", gradients->eps_for, "PATH=VALUE: the step for one input path")
      ->envname(env("EPS_FOR"));
  check->add_option("--rtol", gradients->check.rtol, "Relative tolerance (to the endpoint's value)")
      ->envname(env("RTOL"))
      ->capture_default_str();
  check->add_option("--max-evals", gradients->check.max_evals, "Sampled input elements per endpoint")
      ->envname(env("MAX_EVALS"))
      ->capture_default_str();
  check
      ->add_option("--max-output-samples", gradients->check.max_output_samples,
                   "Output elements swept per VJP check (default: all)")
      ->envname(env("MAX_OUTPUT_SAMPLES"));
  check->add_option("--max-failures", gradients->max_failures, "Failures shown per endpoint")
      ->envname(env("MAX_FAILURES"))
      ->capture_default_str();
  check->add_option("--seed", gradients->seed, "Seed of the sampling (default: random)")
      ->envname(env("SEED"));
  check
      ->add_flag("--show-progress,!--no-show-progress", gradients->show_progress,
                 "Progress on a terminal (default: shown)")
      ->envname(env("SHOW_PROGRESS"));
  check->callback([gradients] {
    if (Status named = ResolveComponent(gradients->target, &gradients->payload); !named.ok()) {
      std::exit(Fail(named) + 1);  // exit status 2: the check could not run
    }
    std::exit(CheckGradients(*gradients));
  });
}

// check: tesseract-runtime check. Opens the component as serve would (a
// library: it loads, its build signature matches this tesscpp, its factory
// succeeds; a module: imported with tesseract-core's own checks of
// InputSchema, OutputSchema and apply) and builds its OpenAPI document, which
// renders every schema; serves and calls nothing.
int CheckComponent(const CommonOptions& o) {
  auto opened = MakeRuntime(o);
  if (!opened.ok()) return Fail(opened.status());
  tesscpp::RuntimeRequest request;
  request.method = "GET";
  request.target = "/openapi.json";
  const tesscpp::RuntimeResponse response = opened->runtime->Handle(request);
  if (response.status != 200) {
    std::cerr << "tesscpp: the OpenAPI document of " << opened->name << " failed with HTTP status "
              << response.status << ":\n"
              << response.body.string_view() << "\n";
    return 1;
  }
  std::cout << "✅ Tesseract API check successful ✅" << std::endl;
  return 0;
}

void AddCheckCommand(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  CLI::App* check = app.add_subcommand(
      "check",
      "Check that a component loads and its API is valid, serving nothing (tesseract-runtime check)");
  check->add_option(
      "component", o->library,
      "Component library or tesseract_api.py (default: $TESSCPP_COMPONENT, $TESSERACT_API_PATH)");
  check->callback([o] {
    if (Status named = ResolveComponent(o->library, nullptr); !named.ok()) std::exit(Fail(named) + 1);
    std::exit(CheckComponent(*o));
  });
}

// main's body: the subcommands run from its parse callbacks.
// tesseract-runtime's settings before the command (runtime_options.h): each
// given one is set in the environment before the command's callback runs.
void AddRuntimeOptions(CLI::App& app) {
  auto given = std::make_shared<std::vector<std::pair<std::string, std::string>>>();
  for (const RuntimeSetting& s : RuntimeSettings()) {
    const std::string variable = s.variable;
    const std::string help = s.choices == nullptr ? s.help : std::string(s.help) + ": " + s.choices();
    CLI::Option* option =
        s.is_switch
            ? app.add_flag_callback(
                  s.flag, [given, variable] { given->emplace_back(variable, "1"); }, help)
            : app.add_option_function<std::string>(
                  s.flag, [given, variable](const std::string& v) { given->emplace_back(variable, v); },
                  help);
    option->group("tesseract-runtime's settings (before the command)");
  }
  app.parse_complete_callback([given] {
    for (const auto& [variable, value] : *given) ::setenv(variable.c_str(), value.c_str(), 1);
  });
}

int Run(int argc, char** argv) {
  CLI::App app{"tesscpp: serve and run Tesseracts (C++ component libraries and tesseract_api.py modules)"};
  app.require_subcommand(1);
  AddRuntimeOptions(app);
  ReadServeEnvironment();
  AddServeCommand(app);
  AddEndpointCommands(app);
  AddCallCommand(app);
  AddBuildCommand(app);
  AddRunCommand(app);
  AddInitCommand(app);
  AddCheckGradientsCommand(app);
  AddCheckCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace

// Errors travel as Status; what can still throw (allocation, the standard
// library) is reported in one line rather than by std::terminate's abort.
int Main(int argc, char** argv, const PythonHost* host) {
  ThisProcess() = Process{argc, argv, host};
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tesscpp: unexpected error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "tesscpp: unexpected error\n";
  }
  return 1;
}

}  // namespace tesscpp::cli
