// served_server.cc: what FromSource and FromImage share — scratch
// directories, TESSERACT_* settings, the health wait and its error.
#include "client/served_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "client/http_connection.h"
#include "client/session.h"
#include "tesscpp/internal/codec/array_encoding.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::client {

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

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

const std::string* RuntimeConfigTransport(const ServeOptions& options) {
  for (const auto& [key, value] : options.runtime_config) {
    if (Upper(key) == "GPU_TRANSPORT") return &value;
  }
  return nullptr;
}

}  // namespace

Result<std::pair<std::string, std::string>> PrepareServeDirs(const ServeOptions& options,
                                                             ServedServer& server, std::string_view who) {
  const Result<OutputFormat> format = OutputFormatFromName(options.output_format);
  if (!format.ok()) {
    return Status::InvalidArgument(who, ": output_format '", options.output_format, "' is not one of ",
                                   OutputFormatChoices(NameList::kQuoted));
  }
  std::error_code ec;
  std::string output_path = options.output_path;
  if (output_path.empty()) {
    TESS_ASSIGN_OR_RETURN(output_path, platform::MakeScratchDir("tesseract_output_"));
    server.scratch_dirs.insert(server.scratch_dirs.begin(), output_path);
  } else {
    fs::create_directories(output_path, ec);
    if (ec) return Status::IoError(who, ": cannot create output_path '", output_path, "': ", ec.message());
    output_path = fs::absolute(output_path).lexically_normal().string();
  }
  std::string input_path = options.input_path;
  if (input_path.empty() && *format == OutputFormat::kJsonBinref) {
    TESS_ASSIGN_OR_RETURN(input_path, platform::MakeScratchDir("tesseract_input_"));
    server.scratch_dirs.insert(server.scratch_dirs.begin(), input_path);
  } else if (!input_path.empty()) {
    input_path = fs::absolute(input_path).lexically_normal().string();
  }
  return std::make_pair(std::move(input_path), std::move(output_path));
}

std::vector<std::pair<std::string, std::string>> ServeSettings(
    const ServeOptions& options, const std::optional<std::string>& transport_default) {
  // Debug mode, as the SDK's from_source and from_image: tracebacks in 500s
  // and /test. runtime_config comes after, so it can turn it off.
  std::vector<std::pair<std::string, std::string>> settings{
      {"TESSERACT_DEBUG", "1"}, {"TESSERACT_OUTPUT_FORMAT", options.output_format}};
  for (const auto& [key, value] : options.runtime_config)
    settings.emplace_back("TESSERACT_" + Upper(key), value);
  // The option wins over runtime_config's spelling of the same setting.
  // A client token is the served server's token: it requires what we send.
  if (!options.client.token.empty()) settings.emplace_back("TESSERACT_API_TOKEN", options.client.token);
  if (options.gpu_transport) {
    settings.emplace_back("TESSERACT_GPU_TRANSPORT", *options.gpu_transport);
  } else if (RuntimeConfigTransport(options) == nullptr && transport_default) {
    settings.emplace_back("TESSERACT_GPU_TRANSPORT", *transport_default);
  }
  return settings;
}

std::optional<std::string> RequestedTransport(const ServeOptions& options) {
  if (options.gpu_transport) return options.gpu_transport;
  if (const std::string* configured = RuntimeConfigTransport(options)) return *configured;
  return std::nullopt;
}

Result<std::shared_ptr<TesseractSession>> ConnectServed(const std::string& url, const ServeOptions& options,
                                                        const std::string& input_path,
                                                        const std::string& output_path,
                                                        std::unique_ptr<ServedServer> server) {
  ClientOptions connect = options.client;
  connect.server_output_path = output_path;
  connect.server_input_path = input_path;
  connect.encoding.output_format = options.output_format;
  connect.encoding.gpu_transport = RequestedTransport(options);
  return MakeHttpSession(url, std::move(connect), std::move(server));
}

Status WaitForHealth(const std::string& url, const std::string& token, const std::function<bool()>& alive,
                     std::chrono::steady_clock::time_point deadline) {
  TESS_ASSIGN_OR_RETURN(auto probe, HttpConnection::Open(url, {1.0, 2.0}, 1, AuthorizationHeaders(token)));
  while (std::chrono::steady_clock::now() < deadline) {
    auto response = probe->Send("GET", "/health", {}, nullptr);
    if (response.ok() && response->status == 200) return Status::OK();
    if (!alive()) return Status::Unavailable("exited");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::DeadlineExceeded("not healthy");
}

Result<int> FreePort(const std::string& host_ip, int first, int last) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host_ip.c_str(), &address.sin_addr) != 1) {
    return Status::InvalidArgument("host_ip '", host_ip, "' is not an IPv4 address");
  }
  // A random start, so that callers racing for one range spread over it.
  const int span = last - first + 1;
  const int offset = span > 1 ? static_cast<int>(std::random_device{}() % static_cast<unsigned>(span)) : 0;
  for (int i = 0; i < span; ++i) {
    platform::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return Status::IoError("socket: ", std::strerror(errno));
    address.sin_port = htons(static_cast<uint16_t>(first == 0 ? 0 : first + (offset + i) % span));
    socklen_t length = sizeof address;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      return static_cast<int>(ntohs(address.sin_port));
    }
  }
  return Status::Unavailable("no free port on ", host_ip,
                             first == 0 ? "" : " in " + std::to_string(first) + "-" + std::to_string(last));
}

std::chrono::steady_clock::time_point DeadlineIn(double timeout_s) {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(timeout_s));
}

Status StartupFailure(const std::string& what, bool exited, const std::string& state, double timeout_s,
                      const Status& cause, const std::string& logs) {
  char seconds[32];
  const char* end = std::to_chars(seconds, seconds + sizeof seconds, timeout_s).ptr;
  const std::string why =
      exited ? "stopped before it was healthy (" + state + ")"
             : "was not healthy within " + std::string(static_cast<const char*>(seconds), end) + " s";
  const StatusCode code = exited                                          ? StatusCode::kUnavailable
                          : cause.code() == StatusCode::kDeadlineExceeded ? StatusCode::kDeadlineExceeded
                                                                          : cause.code();
  return Status(code, what + " " + why + "; its log:\n" + logs);
}

}  // namespace tesscpp::client
