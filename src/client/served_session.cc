// served_session.cc: Tesseract::FromSource — start `tesscpp serve` for a
// component library or `tesseract-runtime serve` for a tesseract_api.py, wait
// until it is healthy, and connect to it.
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>

#include "client/http_connection.h"
#include "client/served_server.h"
#include "client/session.h"
#include "platform/file.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace tesscpp {

void ServedServer::Stop() {
  if (process != nullptr) {
    process->Stop();
    last_logs = process->Logs();
    process.reset();
  }
  std::error_code ignored;
  for (const std::string& dir : scratch_dirs) std::filesystem::remove_all(dir, ignored);
  scratch_dirs.clear();
}

namespace {

namespace fs = std::filesystem;

// A port nobody listens on now (the Python runtime needs one given; the
// tesscpp server picks its own with --port 0 and prints it).
Result<int> FreePort() {
  internal::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::IoError("socket: ", std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return Status::IoError("cannot find a free port: ", std::strerror(errno));
  }
  return static_cast<int>(ntohs(address.sin_port));
}

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

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
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

// Waits for the "tesscpp: serving <name> on <url>" line.
Result<std::string> WaitForServingLine(client::ServerProcess& process,
                                       std::chrono::steady_clock::time_point deadline) {
  static const std::regex kServing(R"(tesscpp: serving \S+ on (http://\S+))");
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string logs = process.Logs();
    if (std::regex_search(logs, match, kServing)) return match[1].str();
    if (!process.Alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::DeadlineExceeded("no serving line");
}

Status WaitForHealth(const std::string& url, client::ServerProcess& process,
                     std::chrono::steady_clock::time_point deadline) {
  TESS_ASSIGN_OR_RETURN(auto probe, client::HttpConnection::Open(url, {1.0, 2.0}));
  while (std::chrono::steady_clock::now() < deadline) {
    auto response = probe->Send("GET", "/health", {}, nullptr);
    if (response.ok() && response->status == 200) return Status::OK();
    if (!process.Alive()) return Status::Unavailable("exited");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::DeadlineExceeded("not healthy");
}

}  // namespace

Result<std::shared_ptr<TesseractSession>> MakeServedSession(const std::string& path,
                                                            const SourceOptions& options) {
  const bool is_library = EndsWith(path, ".so") || path.find(".so.") != std::string::npos;
  const bool is_python = EndsWith(path, ".py");
  if (!is_library && !is_python) {
    return Status::InvalidArgument("from_source: '", path,
                                   "' is neither a component library (.so) nor a tesseract_api.py (.py)");
  }
  std::error_code ec;
  const fs::path absolute = fs::canonical(path, ec);
  if (ec || !fs::is_regular_file(absolute)) return Status::NotFound("from_source: no such file '", path, "'");
  if (options.output_format != "json" && options.output_format != "json+base64" &&
      options.output_format != "json+binref") {
    return Status::InvalidArgument("from_source: output_format '", options.output_format,
                                   "' is not one of 'json', 'json+base64', 'json+binref'");
  }

  auto server = std::make_unique<ServedServer>();
  TESS_ASSIGN_OR_RETURN(std::string log_dir, internal::MakeTempDir("tesscpp_serve_"));
  server->scratch_dirs.push_back(log_dir);
  std::string output_path = options.output_path;
  if (output_path.empty()) {
    TESS_ASSIGN_OR_RETURN(output_path, internal::MakeTempDir("tesseract_output_"));
    server->scratch_dirs.insert(server->scratch_dirs.begin(), output_path);
  } else {
    fs::create_directories(output_path, ec);
    output_path = fs::absolute(output_path).string();
  }
  std::string input_path = options.input_path;
  if (input_path.empty() && options.output_format == "json+binref") {
    TESS_ASSIGN_OR_RETURN(input_path, internal::MakeTempDir("tesseract_input_"));
    server->scratch_dirs.insert(server->scratch_dirs.begin(), input_path);
  } else if (!input_path.empty()) {
    input_path = fs::absolute(input_path).string();
  }

  // Debug mode, as the SDK's from_source: tracebacks in 500s and /test.
  std::vector<std::pair<std::string, std::string>> settings{
      {"TESSERACT_DEBUG", "1"},
      {"TESSERACT_OUTPUT_PATH", output_path},
      {"TESSERACT_OUTPUT_FORMAT", options.output_format}};
  if (!input_path.empty()) settings.emplace_back("TESSERACT_INPUT_PATH", input_path);
  for (const auto& [key, value] : options.runtime_config)
    settings.emplace_back("TESSERACT_" + Upper(key), value);
  std::optional<std::string> gpu_transport = options.gpu_transport;
  if (gpu_transport) settings.emplace_back("TESSERACT_GPU_TRANSPORT", *gpu_transport);

  std::vector<std::string> argv;
  int port = 0;
  if (is_library) {
    argv = {TesscppExecutable(options.tesscpp_executable),
            "serve",
            absolute.string(),
            "--host",
            "127.0.0.1",
            "--port",
            "0"};
  } else {
    TESS_ASSIGN_OR_RETURN(port, FreePort());
    TESS_ASSIGN_OR_RETURN(int debugger_port, FreePort());
    settings.emplace_back("TESSERACT_API_PATH", absolute.string());
    settings.emplace_back("TESSERACT_DEBUGPY_PORT",
                          std::to_string(debugger_port));  // debug mode listens there
    settings.emplace_back("PYTHONUNBUFFERED", "1");
    const std::string python = options.python_executable.empty() ? "python3" : options.python_executable;
    argv = {python,      "-c",     kRunTesseractRuntime, "serve", "--host",
            "127.0.0.1", "--port", std::to_string(port)};
  }
  const std::string log_path = (fs::path(log_dir) / "server.log").string();
  TESS_ASSIGN_OR_RETURN(server->process,
                        client::ServerProcess::Start(argv, ServerEnvironment(settings),
                                                     absolute.parent_path().string(), log_path));

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(options.startup_timeout_s));
  auto failed = [&](const Status& why) {
    const std::string state = server->process->State();
    const std::string logs = server->process->Logs();
    const bool exited = !server->process->Alive();
    server->Stop();
    const std::string what =
        "from_source: the server for '" + path + "' (" + argv[0] + ") " +
        (exited ? "stopped before it was healthy (" + state + ")"
                : "was not healthy within " + std::to_string(options.startup_timeout_s) + " s") +
        "; its log:\n" + logs;
    return Status(exited                                        ? StatusCode::kUnavailable
                  : why.code() == StatusCode::kDeadlineExceeded ? StatusCode::kDeadlineExceeded
                                                                : why.code(),
                  what);
  };
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  if (is_library) {
    auto line = WaitForServingLine(*server->process, deadline);
    if (!line.ok()) return failed(line.status());
    url = *line;
  }
  if (Status healthy = WaitForHealth(url, *server->process, deadline); !healthy.ok()) return failed(healthy);

  ClientOptions client = options.client;
  client.server_output_path = output_path;
  client.server_input_path = input_path;
  client.encoding.output_format = options.output_format;
  client.encoding.gpu_transport = gpu_transport;
  return MakeHttpSession(url, std::move(client), std::move(server));
}

}  // namespace tesscpp
