// The tesscpp command line (cli.h): every command's options, parsed with
// CLI11 (kept to this file: a heavy header), and the command each runs —
// serve a component library or a tesseract_api.py over HTTP
// (serve_command.h), print its OpenAPI document or run one endpoint once from
// the shell as `tesseract-runtime` does (one_shot_commands.h), call any
// served Tesseract (call_command.h), check gradients
// (check_gradients_command.h), build and run images, write a project.
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
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "call_command.h"
#include "check_gradients_command.h"
#include "cli.h"
#include "command_context.h"
#include "image_build.h"
#include "image_run.h"
#include "init_project.h"
#include "one_shot_commands.h"
#include "runtime_options.h"
#include "serve_command.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/codec/array_encoding.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/gpu_transport/gpu_transports.h"
#include "tesscpp/internal/http/http_server.h"

namespace tesscpp::cli {
namespace {

namespace core = tesscpp::core;
using tesscpp::Result;
using tesscpp::Status;

void AddCommonOptions(CLI::App* command, CommonOptions& o) {
  command->add_option("component", o.library,
                      "Component library (lib<name>.so) or tesseract_api.py; default $TESSCPP_COMPONENT, "
                      "else $TESSERACT_API_PATH");
  command->add_option("--output-format", o.output_format, OutputFormatChoices(NameList::kPlain));
  command->add_option("--output-path", o.output_path, "Directory for run directories and binref outputs");
  command->add_option("--input-path", o.input_path, "Directory relative binref inputs are read from");
  command->add_option("--gpu-transport", o.gpu_transport,
                      gpu_transport::TransportChoices(NameList::kPlain) +
                          ": how CUDA arrays go in and out (TESSERACT_GPU_TRANSPORT)");
  command->add_flag("--debug", o.debug, "Tracebacks in 500 responses and the /test endpoint");
}

// Forward reuse's budgets (docs/forward-reuse.md): the runtime reads these
// settings from the environment, so a given flag is put there.
void AddResidualOptions(CLI::App* serve) {
  for (const auto& [flag, variable, help] :
       {std::tuple{"--residual-host-mib", "TESSERACT_RESIDUAL_HOST_MB",
                   "Host MiB per worker for what applies keep for their derivative calls (default 1024; "
                   "0 with --residual-device-mib 0: keep nothing)"},
        std::tuple{"--residual-device-mib", "TESSERACT_RESIDUAL_DEVICE_MB",
                   "Device MiB per worker for what applies keep for their derivative calls (default 1024)"},
        std::tuple{"--residual-ttl", "TESSERACT_RESIDUAL_TTL_S",
                   "Seconds a kept forward lives (default 600)"}}) {
    const std::string name = variable;
    serve
        ->add_option_function<int64_t>(
            flag, [name](int64_t value) { ::setenv(name.c_str(), std::to_string(value).c_str(), 1); },
            std::string(help) + " (" + variable + ")")
        ->check(CLI::NonNegativeNumber);
  }
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
  AddResidualOptions(serve);
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
                   gpu_transport::TransportChoices(NameList::kPlain) + ": how CUDA arrays go in and out");
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
