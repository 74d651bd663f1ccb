// The client: encoding rules, answers of misbehaving servers (a scripted
// socket server), and the real paths — from_library, from_source for a
// component library and for a Python tesseract_api.py (tesseract-runtime).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "client/http_connection.h"
#include "client/server_process.h"
#include "core/status_matchers.h"
#include "support/test_tensors.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp {
namespace {

namespace fs = std::filesystem;

const std::string kExamples = TESS_EXAMPLES_DIR;  // NOLINT(cert-err58-cpp): test constants
const std::string kFixtures =
    std::string(TESS_SOURCE_DIR) + "/tests/fixtures";  // NOLINT(cert-err58-cpp): test constants
const std::string kVenvPython = TESS_VENV_PYTHON;      // NOLINT(cert-err58-cpp): test constants

using ::testing::HasSubstr;
using testing::Values;
using testing::Vector;

Value VectorAddInputs() { return Value::Dict{{"a", Vector({1, 2, 3})}, {"b", Vector({4, 5, 6})}}; }

Value CollectionsInputs() {
  return Value::Dict{{"arrays", Value::List{Vector({1, 2}), Vector({3, 4}), Value::List{5.0, 6.0}}},
                     {"weights", Value::Dict{{"w1", Vector({0.5, 2})}}},
                     {"scale", 3.0}};
}

// ------------------------------------------------ from_image option errors
// Refused before any engine is asked (the engine-backed tests are in
// container_test.cc, run by tests/containers).

TEST(FromImageOptions, BadOptionsAreNamed) {
  auto expect = [](const ImageOptions& options, StatusCode code, const std::string& words) {
    auto t = Tesseract::FromImage("any:tag", options);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), code) << t.status().ToString();
    EXPECT_NE(t.status().message().find(words), std::string::npos) << t.status().message();
  };
  ImageOptions o;
  o.volumes = {"/tmp"};
  expect(o, StatusCode::kInvalidArgument, "'/tmp' is not a volume");
  o.volumes = {"/tmp:/a:rx"};
  expect(o, StatusCode::kInvalidArgument, "is not a volume");
  o.volumes = {"/no/such/dir:/a"};
  expect(o, StatusCode::kNotFound, "'/no/such/dir'");
  o.volumes = {"/tmp:relative"};
  expect(o, StatusCode::kInvalidArgument, "not an absolute path");
  o.volumes = {"/tmp:/a", "/tmp:/b"};
  expect(o, StatusCode::kInvalidArgument, "mounted twice");
  o = {};
  o.port = "99999";
  expect(o, StatusCode::kInvalidArgument, "port '99999'");
  o.port = "9000-8000";
  expect(o, StatusCode::kInvalidArgument, "is empty");
  o = {};
  o.network_alias = "a";
  expect(o, StatusCode::kInvalidArgument, "network_alias needs a network");
  o = {};
  o.num_workers = 0;
  expect(o, StatusCode::kInvalidArgument, "num_workers");
  o = {};
  o.gpu_transport = "cuda_ipc";
  expect(o, StatusCode::kInvalidArgument, "needs GPU access");
  o.gpus = {"0"};
  o.num_workers = 2;
  expect(o, StatusCode::kInvalidArgument, "more than one worker");
  o = {};
  o.runtime_config = {{"gpu_transport", "nvlink"}};
  expect(o, StatusCode::kInvalidArgument, "'nvlink'");
  o = {};
  o.output_format = "xml";
  expect(o, StatusCode::kInvalidArgument, "output_format 'xml'");
  EXPECT_EQ(Tesseract::FromImage("", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(FromImageOptions, AMissingEngineCommandIsUnavailable) {
  ::setenv("TESSERACT_DOCKER_EXECUTABLE", "/no/such/engine", 1);
  auto t = Tesseract::FromImage("any:tag");
  ::unsetenv("TESSERACT_DOCKER_EXECUTABLE");
  ASSERT_FALSE(t.ok());
  EXPECT_STATUS(t, StatusCode::kUnavailable);
  EXPECT_NE(t.status().message().find("TESSERACT_DOCKER_EXECUTABLE"), std::string::npos);
}

// ------------------------------------------------------------ encoding rules

// A server's log read while it writes its listening line must not give a
// cut URL (a client then probed port 80 for the whole startup timeout).
TEST(ListeningUrl, OnlyFromAWholeLine) {
  const std::string line = "tesscpp: serving list on http://127.0.0.1:44877\n";
  for (size_t cut = 0; cut < line.size(); ++cut) {
    EXPECT_EQ(client::ListeningUrl(line.substr(0, cut), true), std::nullopt) << line.substr(0, cut);
  }
  EXPECT_EQ(client::ListeningUrl("starting\n" + line + "more\n", true), "http://127.0.0.1:44877");
  const std::string uvicorn = "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\n";
  for (size_t cut = 0; cut < uvicorn.size(); ++cut) {
    EXPECT_EQ(client::ListeningUrl(uvicorn.substr(0, cut), false), std::nullopt) << uvicorn.substr(0, cut);
  }
  EXPECT_EQ(client::ListeningUrl(uvicorn, false), "http://127.0.0.1:8000");
  EXPECT_EQ(client::ListeningUrl(uvicorn, true), std::nullopt);
}

TEST(RequestedEncoding, AcceptHeaderAsTheSdkSendsIt) {
  EXPECT_EQ(RequestedEncoding{}.AcceptHeader(), std::nullopt);
  EXPECT_EQ((RequestedEncoding{std::nullopt, "none", std::nullopt}.AcceptHeader()),
            "application/*; gpu_transport=none");
  EXPECT_EQ((RequestedEncoding{"json+base64", "none", "lz4"}.AcceptHeader()),
            "application/json+base64; gpu_transport=none; compression=lz4");
  const RequestedEncoding merged =
      RequestedEncoding{"json", "none", std::nullopt}.Merge({std::nullopt, std::nullopt, "lz4"});
  EXPECT_EQ(merged, (RequestedEncoding{"json", "none", "lz4"}));
}

TEST(RequestedEncoding, CheckedAgainstWhatTheServerAdvertises) {
  const ServerCapabilities v115{std::vector<std::string>{"json", "json+base64", "json+binref"},
                                std::vector<std::string>{"none"}, std::vector<std::string>{"none", "lz4"}};
  EXPECT_TRUE(FitEncodingToServer({"json+binref", "none", "lz4"}, v115).ok());
  auto format = FitEncodingToServer({"json+msgpack", "none", std::nullopt}, v115);
  EXPECT_STATUS(format, StatusCode::kInvalidArgument);
  EXPECT_NE(format.status().message().find("output_format='json+msgpack'"), std::string::npos);
  EXPECT_FALSE(FitEncodingToServer({std::nullopt, "cuda_ipc", std::nullopt}, v115).ok());
  EXPECT_FALSE(FitEncodingToServer({std::nullopt, "none", "zstd"}, v115).ok());

  // A format left to the server: json+base64 where offered, else unsaid.
  ASSERT_OK_AND_ASSIGN(const RequestedEncoding fitted,
                       FitEncodingToServer({std::nullopt, "none", std::nullopt}, v115));
  EXPECT_EQ(fitted.output_format, "json+base64");
  const ServerCapabilities json_only{std::vector<std::string>{"json"}, std::nullopt, std::nullopt};
  ASSERT_OK_AND_ASSIGN(const RequestedEncoding unsaid,
                       FitEncodingToServer({std::nullopt, std::nullopt, std::nullopt}, json_only));
  EXPECT_EQ(unsaid.output_format, std::nullopt);

  // 1.13/1.14: formats but no transports.
  const ServerCapabilities v113{v115.output_formats, std::nullopt, std::nullopt};
  EXPECT_TRUE(FitEncodingToServer({std::nullopt, "none", "lz4"}, v113).ok());
  EXPECT_NE(FitEncodingToServer({std::nullopt, "cuda_ipc", std::nullopt}, v113)
                .status()
                .message()
                .find("1.13 or 1.14"),
            std::string::npos);

  // Older than 1.13: no parameters at all; gpu_transport=none goes unsaid.
  const ServerCapabilities old{};
  auto dropped = FitEncodingToServer({"json", "none", std::nullopt}, old);
  ASSERT_OK(dropped);
  EXPECT_EQ(dropped->gpu_transport, std::nullopt);
  EXPECT_EQ(dropped->AcceptHeader(), "application/json");
  EXPECT_NE(
      FitEncodingToServer({std::nullopt, "none", "lz4"}, old).status().message().find("older than 1.13"),
      std::string::npos);
}

TEST(RequestedEncoding, CapabilitiesFromTheOpenApiDocument) {
  const Value doc = Value::Dict{{"x-supported-output-formats", Value::List{"json"}},
                                {"x-supported-compressions", Value::List{"none", "lz4"}}};
  const ServerCapabilities c = ServerCapabilities::FromOpenApi(doc);
  EXPECT_EQ(c.output_formats, std::vector<std::string>{"json"});
  EXPECT_EQ(c.gpu_transports, std::nullopt);
  EXPECT_EQ(c.compressions, (std::vector<std::string>{"none", "lz4"}));
}

TEST(SanitizeUrl, AsTheSdk) {
  EXPECT_EQ(client::SanitizeUrl("localhost:8000"), "http://localhost:8000");
  EXPECT_EQ(client::SanitizeUrl("http://h:1/prefix/?q=1#x"), "http://h:1/prefix");
  EXPECT_EQ(client::SanitizeUrl("https://h/"), "https://h");
}

// ------------------------------------------------------------ scripted servers

// A one-thread HTTP server on loopback whose answers a test scripts: reply()
// gets the request line ("POST /apply?run_id=x HTTP/1.1") and returns raw
// bytes to write (empty: write nothing and keep the connection silent).
class ScriptedServer {
 public:
  using Reply = std::function<std::string(const std::string& request_line)>;

  explicit ScriptedServer(Reply reply, bool close_after_reply = true)
      : reply_(std::move(reply)), close_after_reply_(close_after_reply) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener_, 8), 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }
  const std::string& url() const { return url_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  // The request lines with their headers, "\r\n"-separated.
  std::vector<std::string> heads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return heads_;
  }

  // A reply that closes the connection after reading the request, unanswered.
  static constexpr const char* kHangUp = "<hang up>";

  static std::string Http(int status, const std::string& body, const std::string& type = "application/json",
                          bool close = true) {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") +
           "\r\n\r\n" + body;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      Handle(fd);
      ::close(fd);
    }
  }
  // Reads requests (headers, then Content-Length bytes) and answers each.
  void Handle(int fd) {
    std::string in;
    char chunk[65536];
    while (!stop_) {
      const size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::string head = in.substr(0, end);
        size_t length = 0;
        if (const size_t at = head.find("Content-Length: "); at != std::string::npos) {
          length = std::stoul(head.substr(at + 16));
        }
        if (in.size() >= end + 4 + length) {
          const std::string line = head.substr(0, head.find("\r\n"));
          in.erase(0, end + 4 + length);
          {
            std::lock_guard<std::mutex> lock(mutex_);
            requests_.push_back(line);
            heads_.push_back(head);
          }
          const std::string out = reply_(line);
          if (out == kHangUp) return;  // closes the connection without an answer
          if (out.empty()) {           // stay silent until the test ends
            while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            return;
          }
          (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
          if (close_after_reply_) return;
          continue;
        }
      }
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      in.append(chunk, static_cast<size_t>(n));
    }
  }

  Reply reply_;
  bool close_after_reply_;
  int listener_ = -1;
  std::string url_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

constexpr const char* kOpenApi =
    R"({"openapi":"3.1.0","paths":{"/apply":{},"/health":{}},"x-supported-output-formats":["json","json+base64","json+binref"],)"
    R"("x-supported-gpu-transports":["none"],"x-supported-compressions":["none","lz4"]})";

// Answers /openapi.json with kOpenApi and everything else with `apply`.
ScriptedServer::Reply WithOpenApi(const std::string& apply) {
  return [apply](const std::string& line) {
    if (line.find("/openapi.json") != std::string::npos) return ScriptedServer::Http(200, kOpenApi);
    return apply;
  };
}

// No test here bounds a duration (a loaded 2-core machine would make any bound
// flaky); each asserts which failure was reported, which says whether a
// timeout fired or the problem was seen at once.
TEST(ClientErrors, DeadPortIsARefusedConnectionNotATimeout) {
  int port = 0;
  {
    ScriptedServer gone([](const std::string&) { return std::string(); });
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto t = Tesseract::FromUrl("127.0.0.1:" + std::to_string(port));
  ASSERT_OK(t);
  auto health = t->Health();
  EXPECT_STATUS(health, StatusCode::kUnavailable);
  EXPECT_THAT(health.status().message(), HasSubstr("cannot reach the Tesseract: GET"));
  EXPECT_THAT(health.status().message(), HasSubstr("Couldn't connect to server"));
}

TEST(ClientErrors, SilentServerTimesOut) {
  ScriptedServer silent([](const std::string&) { return std::string(); });
  auto t = Tesseract::FromUrl(silent.url(), {.read_timeout_s = 1});
  auto health = t->Health();
  EXPECT_STATUS(health, StatusCode::kDeadlineExceeded);
  EXPECT_THAT(health.status().message(), HasSubstr("timed out: GET " + silent.url() + "/health"));
}

TEST(ClientErrors, GarbageIsAnErrorNotATimeout) {
  ScriptedServer garbage([](const std::string&) { return std::string("\x01\x02 not http at all\r\n\r\n"); });
  auto t = Tesseract::FromUrl(garbage.url(), {.read_timeout_s = 30});
  auto health = t->Health();
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.status().code(), StatusCode::kDeadlineExceeded) << health.status().ToString();
  EXPECT_THAT(health.status().message(), HasSubstr("GET " + garbage.url() + "/health"));
}

TEST(ClientErrors, InvalidJsonIsADecodeErrorNamingTheEndpoint) {
  ScriptedServer server(WithOpenApi(ScriptedServer::Http(200, R"({"result": [1, 2,)")));
  auto t = Tesseract::FromUrl(server.url());
  auto out = t->Apply(VectorAddInputs());
  EXPECT_STATUS(out, StatusCode::kDecodeError);
  EXPECT_NE(out.status().message().find("answer of apply"), std::string::npos) << out.status();
}

TEST(ClientErrors, BinrefPathsLeavingTheOutputDirectoryAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("tesscpp_client_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "out");
  std::ofstream(dir / "secret.bin") << std::string(24, 'x');
  for (const std::string& buffer : {std::string("../secret.bin:0"), (dir / "secret.bin").string() + ":0"}) {
    ScriptedServer server(WithOpenApi(ScriptedServer::Http(
        200, R"({"result":{"object_type":"array","shape":[3],"dtype":"float64","data":{"buffer":")" + buffer +
                 R"(","encoding":"binref"}}})")));
    auto t = Tesseract::FromUrl(server.url(), {.server_output_path = (dir / "out").string()});
    auto out = t->Apply(VectorAddInputs());
    ASSERT_FALSE(out.ok()) << buffer;
    const std::string& why = out.status().message();
    EXPECT_TRUE(why.find("escapes") != std::string::npos || why.find("is absolute") != std::string::npos)
        << why;
  }
  // Without server_output_path, binref answers are refused with the reason.
  ScriptedServer server(WithOpenApi(ScriptedServer::Http(
      200,
      R"({"r":{"object_type":"array","shape":[1],"dtype":"float64","data":{"buffer":"x.bin:0","encoding":"binref"}}})")));
  auto out = Tesseract::FromUrl(server.url())->Apply(VectorAddInputs());
  EXPECT_NE(out.status().message().find("server_output_path"), std::string::npos) << out.status();
  fs::remove_all(dir);
}

TEST(ClientErrors, StatusesBecomeStructuredErrors) {
  ScriptedServer s422(WithOpenApi(ScriptedServer::Http(
      422,
      R"({"detail":[{"type":"missing","loc":["body","inputs","a"],"msg":"Field required","input":{}},)"
      R"({"type":"value_error","loc":["body","inputs"],"msg":"Value error, bad","input":1,"ctx":{"error":{}}}]})")));
  auto invalid = Tesseract::FromUrl(s422.url())->Apply(Value::Dict{});
  ASSERT_STATUS(invalid, StatusCode::kValidationError);
  const ValidationDetail* detail = GetValidationDetail(invalid.status());
  ASSERT_NE(detail, nullptr);
  ASSERT_EQ(detail->issues().size(), 2U);
  EXPECT_EQ(detail->issues()[0].type, "missing");
  EXPECT_EQ(detail->issues()[0].loc, (std::vector<Value>{"body", "inputs", "a"}));
  EXPECT_EQ(detail->issues()[1].msg, "Value error, bad");
  EXPECT_EQ(invalid.status().message(),
            "2 validation errors for endpoint apply\nbody.inputs.a\n  Field required [type=missing]\n"
            "body.inputs\n  Value error, bad [type=value_error]");

  ScriptedServer s406(WithOpenApi(ScriptedServer::Http(
      406, R"({"detail":{"message":"no","available_formats":["json"],"available_gpu_transports":["none"],)"
           R"("available_compressions":["none"]}})")));
  auto refused = Tesseract::FromUrl(s406.url())->Apply(Value::Dict{});
  EXPECT_STATUS(refused, StatusCode::kNotAcceptable);
  EXPECT_NE(
      refused.status().message().find("output formats [json], gpu transports [none], compressions [none]"),
      std::string::npos)
      << refused.status();

  ScriptedServer s500(WithOpenApi(ScriptedServer::Http(500, "Internal Server Error", "text/plain")));
  auto failed = Tesseract::FromUrl(s500.url())->Apply(Value::Dict{});
  EXPECT_STATUS(failed, StatusCode::kInternal);
  EXPECT_EQ(failed.status().message(), "Error 500 from Tesseract: Internal Server Error");
  const HttpErrorDetail* http = GetHttpErrorDetail(failed.status());
  ASSERT_NE(http, nullptr);
  EXPECT_EQ(http->http_status(), 500);
}

TEST(GpuTransportClient, AcknowledgesFromTheFirstRequestAndOffersToBorrow) {
  // tesseract-core's SDK sends an empty Tesseract-Exports-Done with every GPU
  // request, so that the server keeps its exports until named; tesscpp adds
  // its process for the lease (docs/gpu-transport-protocol.md 11).
  std::string openapi = kOpenApi;
  openapi.replace(openapi.find(R"(["none"])"), 8, R"(["none","cuda_ipc"])");
  ScriptedServer server([&](const std::string& line) {
    if (line.find("/openapi.json") != std::string::npos) return ScriptedServer::Http(200, openapi);
    return ScriptedServer::Http(200, R"({"y":1})");
  });
  auto t = Tesseract::FromUrl(server.url());
  ASSERT_OK(t);
  RequestedEncoding encoding;
  encoding.gpu_transport = "cuda_ipc";
  auto gpu = t->WithEncoding(encoding);
  ASSERT_OK(gpu);
  ASSERT_TRUE(gpu->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 2U);
  EXPECT_NE(heads[1].find("\r\nTesseract-Exports-Done:\r\n"), std::string::npos) << heads[1];
  EXPECT_NE(heads[1].find("\r\nTesscpp-Borrower: " + std::to_string(getpid()) + ":"), std::string::npos)
      << heads[1];
  // Without a GPU transport neither header goes.
  ASSERT_TRUE(t->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  EXPECT_EQ(server.heads().back().find("Tesseract-Exports-Done"), std::string::npos);
  EXPECT_EQ(server.heads().back().find("Tesscpp-Borrower"), std::string::npos);
}

TEST(GpuTransportClient, LeasedExportsWithNothingBorrowedAreAcknowledgedAtOnce) {
  // A leased answer whose arrays are not on a device leaves nothing borrowed:
  // its id goes with the next request, as a copied answer's would.
  std::string openapi = kOpenApi;
  openapi.replace(openapi.find(R"(["none"])"), 8, R"(["none","cuda_ipc"])");
  const std::string body = R"({"y":1})";
  ScriptedServer server([&](const std::string& line) {
    if (line.find("/openapi.json") != std::string::npos) return ScriptedServer::Http(200, openapi);
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTesseract-Exports: abc\r\n"
           "Tesscpp-Exports-Lease: borrower\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  });
  RequestedEncoding encoding;
  encoding.gpu_transport = "cuda_ipc";
  auto t = Tesseract::FromUrl(server.url());
  ASSERT_OK(t);
  auto gpu = t->WithEncoding(encoding);
  ASSERT_OK(gpu);
  ASSERT_TRUE(gpu->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  ASSERT_TRUE(gpu->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 3U);
  EXPECT_NE(heads[2].find("\r\nTesseract-Exports-Done: abc\r\n"), std::string::npos) << heads[2];
}

TEST(GpuTransportClient, OffersIpcEventsOnlyWhenAskedAndChecksTheServersEvents) {
  // docs/gpu-transport-protocol.md 12: the offer goes with cuda_ipc requests of a
  // client created with cuda_ipc_events; the server's event header is read
  // before the answer is, and a malformed one fails the call.
  std::string openapi = kOpenApi;
  openapi.replace(openapi.find(R"(["none"])"), 8, R"(["none","cuda_ipc"])");
  const std::string body = R"({"y":1})";
  std::string exports_event;
  ScriptedServer server([&](const std::string& line) {
    if (line.find("/openapi.json") != std::string::npos) return ScriptedServer::Http(200, openapi);
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTesscpp-Ipc-Events: 1\r\n" + exports_event +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  });
  ClientOptions options;
  options.encoding.gpu_transport = "cuda_ipc";
  options.cuda_ipc_events = true;
  auto t = Tesseract::FromUrl(server.url(), options);
  ASSERT_OK(t);
  ASSERT_TRUE(t->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  ASSERT_TRUE(t->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 3U);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_NE(heads[i].find("\r\nTesscpp-Ipc-Events: 1\r\n"), std::string::npos) << heads[i];
    EXPECT_EQ(heads[i].find("Tesscpp-Inputs-Event"), std::string::npos) << heads[i];  // no device inputs
  }
  exports_event = "Tesscpp-Exports-Event: not-an-event\r\n";
  const Status bad = t->Apply(Value::Dict{{"x", Value(1.0)}}).status();
  EXPECT_NE(bad.message().find("waiting for the GPU work of apply"), std::string::npos) << bad;
  EXPECT_NE(bad.message().find("<device uuid>:<handle>"), std::string::npos) << bad;

  // Not asked for: never offered.
  ClientOptions plain;
  plain.encoding.gpu_transport = "cuda_ipc";
  exports_event.clear();
  auto quiet = Tesseract::FromUrl(server.url(), plain);
  ASSERT_OK(quiet);
  ASSERT_TRUE(quiet->Apply(Value::Dict{{"x", Value(1.0)}}).ok());
  EXPECT_EQ(server.heads().back().find("Tesscpp-Ipc-Events"), std::string::npos) << server.heads().back();
}

TEST(ClientErrors, MissingEndpointsFailBeforeAnyRequest) {
  ScriptedServer server(WithOpenApi(ScriptedServer::Http(200, "{}")));
  auto t = Tesseract::FromUrl(server.url());
  auto jac = t->Jacobian(VectorAddInputs(), {"a"}, {"result"});
  EXPECT_STATUS(jac, StatusCode::kUnimplemented);
  EXPECT_EQ(jac.status().message(), "Jacobian not implemented for this Tesseract.");
  const ServedEndpointsDetail* served = GetServedEndpointsDetail(jac.status());
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->ToString(), "This Tesseract serves: apply, health");
  EXPECT_EQ(t->Test(Value::Dict{}).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(server.requests(), std::vector<std::string>{"GET /openapi.json HTTP/1.1"});
}

TEST(ClientErrors, TheGenericCallSendsOnlyComponentEndpointsByTheirOwnName) {
  // `tesscpp call` sends every endpoint through Call: a name that is no
  // component endpoint must be refused, never sent as another endpoint.
  ScriptedServer server(WithOpenApi(ScriptedServer::Http(200, R"({"result":1})")));
  auto t = Tesseract::FromUrl(server.url());
  const Value body = Value::Dict{{"inputs", VectorAddInputs()}};
  for (const char* name : {"vjp", "health", "openapi", "vector_jacobian_products"}) {
    EXPECT_STATUS(t->Call(name, body), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_STATUS(t->Call("jacobian", body), StatusCode::kUnimplemented);
  ASSERT_OK(t->Call("apply", body));
  EXPECT_EQ(server.requests(),
            (std::vector<std::string>{"GET /openapi.json HTTP/1.1", "POST /apply HTTP/1.1"}));
}

TEST(ClientErrors, ServerClosingAKeptConnectionIsRetried) {
  // Answers without "Connection: close" and then closes: the client's next
  // request meets a dead kept-alive connection.
  ScriptedServer server([](const std::string&) {
    return ScriptedServer::Http(200, R"({"status":"ok"})", "application/json", false);
  });
  auto t = Tesseract::FromUrl(server.url());
  for (int i = 0; i < 5; ++i) ASSERT_OK(t->Health()) << i;
  EXPECT_EQ(server.requests().size(), 5U);
}

TEST(ClientErrors, ACallWhoseKeptConnectionDiesIsNotSentAgain) {
  // The whole apply request is read, then the kept-alive connection closes
  // without an answer: what HAProxy does when the replica computing the call
  // is killed. The call may have run, so it must not run a second time
  // (libcurl's own "retrying a fresh connect" would resend it).
  ScriptedServer server(
      [](const std::string& line) {
        if (line.find("/openapi.json") != std::string::npos) {
          return ScriptedServer::Http(200, kOpenApi, "application/json", false);
        }
        return std::string(ScriptedServer::kHangUp);
      },
      /*close_after_reply=*/false);
  auto t = Tesseract::FromUrl(server.url());
  auto out = t->Apply(VectorAddInputs());
  EXPECT_STATUS(out, StatusCode::kUnavailable);
  EXPECT_THAT(out.status().message(), HasSubstr("not sent again, since the Tesseract may have run it"));
  EXPECT_EQ(server.requests(),
            (std::vector<std::string>{"GET /openapi.json HTTP/1.1", "POST /apply HTTP/1.1"}));
}

// ------------------------------------------------------------ from_library

TEST(FromLibrary, CallsTheComponentInProcess) {
  auto t = Tesseract::FromLibrary(kExamples + "/libvectoradd.so");
  ASSERT_OK(t);
  auto out = t->Apply(VectorAddInputs());
  ASSERT_OK(out);
  EXPECT_EQ(Values(out->as_dict().at("result")), (std::vector<double>{5, 7, 9}));

  auto jac = t->Jacobian(VectorAddInputs(), {"a"}, {"result"});
  ASSERT_OK(jac);
  const auto dims = jac->as_dict().at("result").as_dict().at("a").as_tensor().shape().dims();
  EXPECT_EQ(std::vector<int64_t>(dims.begin(), dims.end()), (std::vector<int64_t>{3, 3}));

  auto invalid = t->Apply(Value::Dict{{"a", Vector({1, 2, 3})}, {"b", Vector({1, 2})}});
  ASSERT_STATUS(invalid, StatusCode::kValidationError);
  ASSERT_NE(GetValidationDetail(invalid.status()), nullptr);
  EXPECT_EQ(GetValidationDetail(invalid.status())->issues()[0].type, "value_error");

  EXPECT_EQ(t->AbstractEval(Value::Dict{}).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(t->Capabilities()->has_value(), false);
  EXPECT_EQ(t->WithEncoding({std::nullopt, "cuda_ipc", std::nullopt}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*t->AvailableEndpoints()), (std::vector<std::string>{"apply", "jacobian", "health", "test"}));
  EXPECT_EQ(t->Teardown().code(), StatusCode::kInvalidArgument);
}

TEST(FromLibrary, TestCasesAndLogStreaming) {
  for (const auto& entry : fs::directory_iterator(kFixtures + "/test_cases/vectoradd")) {
    auto t = Tesseract::FromLibrary(kExamples + "/libvectoradd.so");
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto spec = ReadJson(text.str(), {.arrays = ArrayDetection::kShaped});
    ASSERT_OK(spec);
    auto outcome = t->Test(*spec);
    ASSERT_OK(outcome);
    EXPECT_TRUE(outcome->passed()) << entry.path() << ": " << outcome->message;
  }
  std::vector<std::string> lines;
  LibraryOptions options;
  options.stream_logs = [&](std::string_view line) { lines.emplace_back(line); };
  auto t = Tesseract::FromLibrary(kExamples + "/libcollections.so", options);
  ASSERT_OK(t);
  auto out = t->Apply(CollectionsInputs(), "streamed");
  ASSERT_OK(out);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"collections: summing 3 arrays of length 2", "collections: done"}));
}

// ------------------------------------------------------------ from_source

// The answers of `t` to the collections and noop cases, for comparison across constructors.
void ExpectCollectionsAnswer(const Tesseract& t) {
  auto out = t.Apply(CollectionsInputs());
  ASSERT_OK(out);
  const Value::Dict& d = out->as_dict();
  EXPECT_EQ(Values(d.at("total")), (std::vector<double>{27, 36}));
  EXPECT_EQ(Values(d.at("weighted").as_dict().at("w1")), (std::vector<double>{13.5, 72}));
  ASSERT_EQ(d.at("parts").as_list().size(), 3U);
  EXPECT_EQ(Values(d.at("parts").as_list()[2]), (std::vector<double>{15, 18}));
}

TEST(FromSource, ServesAComponentLibraryAndTearsItDown) {
  std::vector<std::string> lines;
  SourceOptions options;
  options.output_format = "json+binref";
  options.client.stream_logs = [&](std::string_view line) { lines.emplace_back(line); };
  auto t = Tesseract::FromSource(kExamples + "/libcollections.so", options);
  ASSERT_OK(t);
  ExpectCollectionsAnswer(*t);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"collections: summing 3 arrays of length 2", "collections: done"}));
  auto lz4 = t->WithEncoding({std::nullopt, std::nullopt, "lz4"});
  ASSERT_OK(lz4);
  ExpectCollectionsAnswer(*lz4);
  EXPECT_NE(t->ServerLogs()->find("tesscpp: serving collections on http://127.0.0.1:"), std::string::npos);
  const std::string url = t->url();
  ASSERT_OK(t->Teardown());
  EXPECT_FALSE(Tesseract::FromUrl(url, {.connect_timeout_s = 1})->Health().ok());
  EXPECT_STATUS(t->Health(), StatusCode::kUnavailable);
  EXPECT_NE(t->ServerLogs()->find("serving collections"), std::string::npos);  // kept after teardown
}

TEST(FromSource, ServesAPythonTesseractApi) {
  std::vector<std::string> lines;
  SourceOptions options;
  options.python_executable = kVenvPython;
  options.output_format = "json+binref";
  options.client.binref_pool = true;
  options.client.stream_logs = [&](std::string_view line) { lines.emplace_back(line); };
  auto t = Tesseract::FromSource(kFixtures + "/python/collections/tesseract_api.py", options);
  ASSERT_OK(t);
  ExpectCollectionsAnswer(*t);
  ExpectCollectionsAnswer(*t);  // pool slots reused
  EXPECT_EQ(lines.size(), 4U);
  EXPECT_EQ(lines.back(), "collections: done");
  auto caps = t->Capabilities();
  ASSERT_TRUE(caps.ok() && caps->has_value());
  EXPECT_EQ((*caps)->compressions, (std::vector<std::string>{"none", "lz4"}));
  auto out = t->Apply(
      Value::Dict{{"arrays", Value::List{Vector({1e308}), Vector({1e308})}}, {"weights", Value::Dict{}}});
  EXPECT_STATUS(out, StatusCode::kInternal);
  EXPECT_NE(out.status().message().find("Error 500 from Tesseract"), std::string::npos);
  EXPECT_NE(out.status().message().find("not finite"), std::string::npos);  // debug mode: the traceback
}

TEST(FromSource, SameAnswersAsInProcess) {
  auto served = Tesseract::FromSource(kExamples + "/libcollections.so");
  auto loaded = Tesseract::FromLibrary(kExamples + "/libcollections.so");
  ASSERT_TRUE(served.ok() && loaded.ok());
  auto a = served->Apply(CollectionsInputs());
  auto b = loaded->Apply(CollectionsInputs());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(FromSource, BadSourcesFailClearlyWithinTheirTimeouts) {
  EXPECT_EQ(Tesseract::FromSource("/nonexistent/libx.so").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Tesseract::FromSource(kFixtures + "/python/README.md").status().code(),
            StatusCode::kInvalidArgument);

  // A "Python" that exits at once: kUnavailable with its output.
  SourceOptions exits;
  exits.python_executable = "false";
  auto gone = Tesseract::FromSource(kFixtures + "/python/noop/tesseract_api.py", exits);
  EXPECT_STATUS(gone, StatusCode::kUnavailable);
  EXPECT_NE(gone.status().message().find("stopped before it was healthy"), std::string::npos);

  // One that never becomes healthy: kDeadlineExceeded after startup_timeout_s,
  // and the server it started is stopped (its pid is gone once FromSource returns).
  const std::string stem = "tesscpp_slow_" + std::to_string(::getpid());
  const fs::path script = fs::temp_directory_path() / stem;
  const fs::path pid_file = fs::temp_directory_path() / (stem + ".pid");
  std::ofstream(script) << "#!/bin/sh\necho $$ > " << pid_file.string()
                        << "\necho starting slowly\nexec sleep 300\n";
  fs::permissions(script, fs::perms::owner_all);
  SourceOptions slow;
  slow.python_executable = script.string();
  slow.startup_timeout_s = 1;
  auto late = Tesseract::FromSource(kFixtures + "/python/noop/tesseract_api.py", slow);
  EXPECT_STATUS(late, StatusCode::kDeadlineExceeded);
  EXPECT_NE(late.status().message().find("starting slowly"), std::string::npos);
  EXPECT_NE(late.status().message().find("not healthy within 1 s"), std::string::npos) << late.status();
  pid_t slow_pid = 0;
  std::ifstream(pid_file) >> slow_pid;
  ASSERT_GT(slow_pid, 0);
  EXPECT_EQ(::kill(slow_pid, 0), -1) << "the server that never became healthy still runs";
  EXPECT_EQ(errno, ESRCH);
  fs::remove(script);
  fs::remove(pid_file);
}

}  // namespace
}  // namespace tesscpp
