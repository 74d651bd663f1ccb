// served_session.cc: Tesseract::FromSource — start `tesscpp serve` for a
// component library or `tesseract-runtime serve` for a tesseract_api.py, wait
// until it is healthy, and connect to it.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "client/http_connection.h"
#include "client/server_process.h"
#include "client/session.h"
#include "tesscpp/internal/core/component_kind.h"
#include "tesscpp/internal/platform/file.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace tesscpp::client {

namespace {

namespace fs = std::filesystem;

// The tesscpp CLI: the option, $TESSCPP_CLI, ../bin/tesscpp beside
// libtesscpp.so (the build tree and installed layouts), or PATH.
std::string TesscppExecutable(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("TESSCPP_CLI"); env != nullptr && *env != '\0') return env;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&TesscppExecutable), &info) != 0 && info.dli_fname != nullptr) {
    const fs::path beside = fs::path(info.dli_fname).parent_path().parent_path() / "bin" / "tesscpp";
    if (fs::exists(beside)) return beside.string();
  }
  return "tesscpp";
}

// `python -c` this: tesseract-runtime's console script, without needing it on PATH.
constexpr const char* kRunTesseractRuntime =
    "import sys; from tesseract_core.runtime.cli import main; sys.argv[0] = 'tesseract-runtime'; "
    "sys.exit(main())";

// Our environment without TESSERACT_* (a setting of this process must not
// leak into the server), plus `settings`.
std::vector<std::string> ServerEnvironment(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("TESSERACT_", 0) != 0) env.emplace_back(*e);
  }
  for (const auto& [key, value] : settings) env.push_back(std::string(key).append("=").append(value));
  return env;
}

// Waits for the server's listening line (ListeningUrl); the URL it names.
Result<std::string> WaitForListeningLine(client::ServerProcess& process, bool tesscpp,
                                         std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<std::string> url = ListeningUrl(process.Logs(), tesscpp)) return *std::move(url);
    if (!process.Alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::DeadlineExceeded("no line saying where it listens");
}

}  // namespace

Result<std::shared_ptr<TesseractSession>> MakeServedSession(const std::string& path,
                                                            const SourceOptions& options) {
  const core::ComponentKind kind = core::ComponentKindOf(path);
  const bool is_library = kind == core::ComponentKind::kLibrary;
  const bool is_python = kind == core::ComponentKind::kPythonModule;
  if (!is_library && !is_python) {
    return Status::InvalidArgument("from_source: '", path,
                                   "' is neither a component library (.so) nor a tesseract_api.py (.py)");
  }
  if (options.python_runtime != "tesscpp" && options.python_runtime != "tesseract-runtime") {
    return Status::InvalidArgument(
        "from_source: python_runtime must be 'tesscpp' or 'tesseract-runtime', not '", options.python_runtime,
        "'");
  }
  const bool on_tesscpp = is_library || options.python_runtime == "tesscpp";
  std::error_code ec;
  const fs::path absolute = fs::canonical(path, ec);
  if (ec || !fs::is_regular_file(absolute)) return Status::NotFound("from_source: no such file '", path, "'");

  auto server = std::make_unique<ServedServer>();
  TESS_ASSIGN_OR_RETURN(auto dirs, client::PrepareServeDirs(options, *server, "from_source"));
  const auto& [input_path, output_path] = dirs;
  TESS_ASSIGN_OR_RETURN(std::string log_dir, platform::MakeTempDir("tesscpp_serve_"));
  server->scratch_dirs.push_back(log_dir);

  std::vector<std::pair<std::string, std::string>> settings = client::ServeSettings(options, std::nullopt);
  settings.emplace_back("TESSERACT_OUTPUT_PATH", output_path);
  if (!input_path.empty()) settings.emplace_back("TESSERACT_INPUT_PATH", input_path);

  std::vector<std::string> argv;
  if (is_python) {
    settings.emplace_back("TESSERACT_DEBUGPY_PORT", "0");  // debug mode listens for a debugger: any port
    settings.emplace_back("PYTHONUNBUFFERED", "1");
  }
  const std::string python = options.python_executable.empty() ? "python3" : options.python_executable;
  if (on_tesscpp) {
    // The Python that hosts a module (python_module.h in tools/).
    if (is_python) settings.emplace_back("TESSCPP_PYTHON", python);
    argv = {TesscppExecutable(options.tesscpp_executable),
            "serve",
            absolute.string(),
            "--host",
            "127.0.0.1",
            "--port",
            "0"};
  } else {
    settings.emplace_back("TESSERACT_API_PATH", absolute.string());
    argv = {python, "-c", kRunTesseractRuntime, "serve", "--host", "127.0.0.1", "--port", "0"};
  }
  const std::string log_path = (fs::path(log_dir) / "server.log").string();
  TESS_ASSIGN_OR_RETURN(auto process,
                        client::ServerProcess::Start(argv, ServerEnvironment(settings),
                                                     absolute.parent_path().string(), log_path));
  client::ServerProcess& running = *process;
  server->process = std::move(process);

  const auto deadline = client::DeadlineIn(options.startup_timeout_s);
  auto failed = [&](const Status& why) {
    const bool exited = !running.Alive();
    const std::string state = running.State();
    const std::string logs = running.Logs();
    server->Stop();
    return client::StartupFailure("from_source: the server for '" + path + "' (" + argv[0] + ")", exited,
                                  state, options.startup_timeout_s, why, logs);
  };
  auto url = WaitForListeningLine(running, on_tesscpp, deadline);
  if (!url.ok()) return failed(url.status());
  if (Status healthy = client::WaitForHealth(
          *url, options.client.token, [&] { return running.Alive(); }, deadline);
      !healthy.ok())
    return failed(healthy);

  return client::ConnectServed(*url, options, input_path, output_path, std::move(server));
}

}  // namespace tesscpp::client
