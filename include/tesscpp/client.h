// client.h: Tesseract, a handle on any Tesseract — one reached over HTTP
// (tesscpp serve, tesseract-runtime, a container), one whose server process it
// starts and owns, or a component library loaded into this process.
//
//   auto t = Tesseract::FromUrl("http://127.0.0.1:8000");
//   auto out = t->Apply(Value::Dict{{"a", Value(a)}, {"b", Value(b)}, {"s", 2.0}});
//   const Tensor& result = out->as_dict().at("result").as_tensor();
//
// Behaviour follows tesseract-core 1.15's SDK client: the same Accept header,
// the same checks of requested encodings against what the server advertises, the same request bodies. Inputs
// are Value trees whose arrays are Tensors (sent as base64 or binref arraydicts) or plain lists and numbers
// (sent as they are); outputs of apply and the gradient endpoints come back with their arrays decoded into
// Tensors.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/forward_reuse.h"
#include "tesscpp/result.h"
#include "tesscpp/status.h"
#include "tesscpp/validation_issue.h"  // a 422 carries a ValidationDetail
#include "tesscpp/value.h"

namespace tesscpp {

/// \brief The encodings a server advertises in its OpenAPI document
/// (x-supported-output-formats, -gpu-transports, -compressions). A list is
/// nullopt when the server does not advertise it: runtimes older than 1.13
/// advertise nothing, 1.13 and 1.14 only output formats.
struct ServerCapabilities {
  std::optional<std::vector<std::string>> output_formats;
  std::optional<std::vector<std::string>> gpu_transports;
  std::optional<std::vector<std::string>> compressions;

  static ServerCapabilities FromOpenApi(const Value& document);
};

/// \brief What calls through a Tesseract ask for. A field left nullopt is the
/// server's choice, except gpu_transport, which POSTs send as "none".
struct RequestedEncoding {
  std::optional<std::string> output_format;  ///< "json", "json+base64", "json+binref"
  std::optional<std::string> gpu_transport;  ///< "none", "cuda_ipc"
  std::optional<std::string> compression;    ///< "none", "lz4"

  /// \brief A copy where the fields `overrides` sets win.
  RequestedEncoding Merge(const RequestedEncoding& overrides) const;
  /// \brief The Accept value, e.g. "application/json+base64; gpu_transport=none;
  /// compression=lz4", or nullopt when nothing is asked for.
  std::optional<std::string> AcceptHeader() const;

  friend bool operator==(const RequestedEncoding&, const RequestedEncoding&) = default;
};

/// \brief Checks `encoding` against `capabilities` before any request, with the
/// SDK's rules: a server advertising no formats (older than 1.13) cannot take
/// media-type parameters (gpu_transport=none is dropped, anything else
/// refused); one advertising formats but no transports (1.13/1.14) cannot be
/// asked for a GPU transport; a value missing from an advertised list is
/// refused. An output format left unset becomes "json+base64" where the
/// server offers it (lossless and faster than its default json). Returns the
/// encoding to send; kInvalidArgument naming the field.
Result<RequestedEncoding> FitEncodingToServer(RequestedEncoding encoding,
                                              const ServerCapabilities& capabilities);

/// \brief Attached to the Status of a non-2xx answer: the HTTP status and body.
class HttpErrorDetail : public StatusDetail {
 public:
  static constexpr std::string_view kTypeId = "tesscpp::HttpErrorDetail";
  HttpErrorDetail(int http_status, std::string body) : http_status_(http_status), body_(std::move(body)) {}
  std::string_view type_id() const override { return kTypeId; }
  std::string ToString() const override;
  int http_status() const { return http_status_; }
  const std::string& body() const { return body_; }

 private:
  int http_status_;
  std::string body_;
};

/// \brief The HttpErrorDetail of `status`, or nullptr.
const HttpErrorDetail* GetHttpErrorDetail(const Status& status);

/// \brief Attached to the kUnimplemented of an endpoint the Tesseract lacks,
/// whose message is exactly tesseract-core's ("Vector Jacobian Product (VJP)
/// not implemented for this Tesseract.", which callers match on): the
/// endpoints it does serve (the Python package adds them as a note).
class ServedEndpointsDetail : public StatusDetail {
 public:
  static constexpr std::string_view kTypeId = "tesscpp::ServedEndpointsDetail";
  explicit ServedEndpointsDetail(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {}
  std::string_view type_id() const override { return kTypeId; }
  /// \brief "This Tesseract serves: apply, health, ..."
  std::string ToString() const override;
  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  std::vector<std::string> endpoints_;
};

/// \brief The ServedEndpointsDetail of `status`, or nullptr.
const ServedEndpointsDetail* GetServedEndpointsDetail(const Status& status);

/// \brief Receives the lines an endpoint prints (without their newline).
using LogSink = std::function<void(std::string_view line)>;

struct ClientOptions {
  /// Seconds to wait for a connection.
  double connect_timeout_s = 10;
  /// Longest silence, in seconds, while waiting for or reading a response; 0
  /// waits as long as the endpoint runs (the SDK's timeout=None).
  double read_timeout_s = 0;
  /// Idle kept-alive connections kept for reuse. Calls from several threads
  /// run at once, each on a connection of its own; beyond this many, the
  /// extra connections close after their call (requests' pool_maxsize).
  int connection_pool_size = 10;
  /// When set, every request carries "Authorization: Bearer <token>" (a
  /// server started with a token refuses others with 401).
  std::string token;
  /// The server's output directory as this process sees it: json+binref
  /// outputs are read from it (a buffer path leaving it is refused), and
  /// stream_logs tails the run logs in it.
  std::string server_output_path;
  /// The server's input directory as this process sees it: with json+binref,
  /// input arrays are written there as files, removed after the call.
  std::string server_input_path;
  /// Opt-in binref fast path for a tmpfs input/output directory: input arrays
  /// go into reused, pre-faulted pool files, and output arrays borrow
  /// copy-on-write mappings of the server's files (which are then unlinked).
  bool binref_pool = false;
  /// With cuda_ipc, order GPU work by CUDA IPC events where the server is a
  /// tesscpp one (docs/gpu-transport-protocol.md 12): neither side synchronises its
  /// devices, the server's work waits on the GPU for ours, and a call waits
  /// only for the server's work before it returns. Needs every CUDA input to
  /// be complete, or written on the legacy default stream or a blocking one,
  /// when the call starts (what the Python package guarantees by asking
  /// DLPack producers for that stream). Other servers never see the events.
  /// (Independently of this option, CUDA outputs borrowed from a tesscpp
  /// server are released after the work queued on the legacy default stream
  /// or a blocking one when the last of them goes: reads on a non-blocking
  /// stream must be finished by then, docs/gpu-transport-protocol.md 11.)
  bool cuda_ipc_events = false;
  /// The encoding calls request (see Tesseract::WithEncoding).
  RequestedEncoding encoding;
  /// When set, apply and the gradient endpoints stream the run's log lines
  /// here while they run (needs server_output_path).
  LogSink stream_logs;
};

/// \brief What every Tesseract a client serves itself (FromSource, FromImage)
/// is configured with.
struct ServeOptions {
  /// The server's input and output directories on this machine. Empty: a
  /// temporary output directory (and, for json+binref, input directory)
  /// removed on teardown.
  std::string input_path;
  std::string output_path;
  /// Served with this TESSERACT_OUTPUT_FORMAT, and what calls request.
  std::string output_format = "json+base64";
  /// Served with this TESSERACT_GPU_TRANSPORT, and what calls request. Unset:
  /// runtime_config's gpu_transport, else "none".
  std::optional<std::string> gpu_transport;
  /// More TESSERACT_<KEY> settings, e.g. {"profiling", "1"}. The server runs
  /// in debug mode (as the SDK's from_source and from_image) unless this says
  /// otherwise.
  std::vector<std::pair<std::string, std::string>> runtime_config;
  /// Seconds to wait for the server to answer /health.
  double startup_timeout_s = 60;
  /// Timeouts, stream_logs and binref_pool of the client (paths and encoding
  /// come from the fields above).
  ClientOptions client;
};

/// \brief How Tesseract::FromSource serves a component.
struct SourceOptions : ServeOptions {
  /// For a tesseract_api.py: the Python with tesseract-core[runtime] (and,
  /// for the tesscpp runtime, the tesscpp package) that hosts the module
  /// (default: python3 on PATH).
  std::string python_executable;
  /// For a tesseract_api.py: "tesscpp" serves it on tesscpp's runtime
  /// (`tesscpp serve tesseract_api.py`, docs/python-host.md), "tesseract-runtime"
  /// on tesseract-core's own.
  std::string python_runtime = "tesscpp";
  /// For a component library: the tesscpp CLI (default: $TESSCPP_CLI, then
  /// ../bin/tesscpp beside libtesscpp.so, then tesscpp on PATH).
  std::string tesscpp_executable;
};

/// \brief How Tesseract::FromImage runs an image: tesseract-core 1.15's
/// from_image arguments (docs/containers.md). The engine is the command in
/// $TESSERACT_DOCKER_EXECUTABLE (default docker; podman works), reaching the
/// engine $DOCKER_HOST names.
struct ImageOptions : ServeOptions {
  /// Host address the port is published on.
  std::string host_ip = "127.0.0.1";
  /// Host port: "" a free one, "8080" exactly that one, "9000-9100" a free one
  /// in the range (retried on a race, as the SDK).
  std::string port;
  /// A network to join, created when missing; "host" shares the host's
  /// network (no port mapping: the server binds the host port itself).
  std::string network;
  /// The container's name on `network` (needs network).
  std::string network_alias;
  /// More mounts, "source:target[:ro|rw]" (read-only unless rw); a local
  /// source must exist.
  std::vector<std::string> volumes;
  /// Environment variables of the container.
  std::vector<std::pair<std::string, std::string>> environment;
  /// GPUs the container gets: {"all"} or device ids.
  std::vector<std::string> gpus;
  int num_workers = 1;
  /// "uid" or "uid:gid"; empty: this process's uid:gid, so files in the
  /// output directory are the caller's.
  std::string user;
  /// Memory limit, e.g. "512m" (the engine's minimum is 6m).
  std::string memory;
  /// Appended to the engine's `run` options.
  std::vector<std::string> docker_args;
  /// Connect at once, without waiting for /health.
  bool skip_health_check = false;
};

/// \brief The container serving a Tesseract made by FromImage.
struct ContainerInfo {
  std::string id;
  std::string name;
  std::string image;
  std::string status;   ///< the engine's word: "running", "exited", ...
  std::string host_ip;  ///< where its port is published
  int host_port = 0;
  std::string url;  ///< what calls go to
  Value attrs;      ///< the engine's `inspect` document
};

/// \brief How Tesseract::FromLibrary runs a component in this process.
struct LibraryOptions {
  /// Where run directories go. Empty: a temporary directory removed with the
  /// last handle.
  std::string output_path;
  std::optional<std::string> gpu_transport;
  /// More TESSERACT_<KEY> settings, as SourceOptions::runtime_config.
  std::vector<std::pair<std::string, std::string>> runtime_config;
  LogSink stream_logs;
};

/// \brief The outcome of the GPU transport check exchange (see
/// Tesseract::CheckGpuTransport).
struct GpuTransportCheck {
  bool works = false;
  std::string reason;  ///< why not, when it does not work
};

/// \brief What Tesseract::ResolveGpuTransport chose.
struct GpuTransportChoice {
  std::string transport;  ///< "none" or the transport GPU arrays travel by
  /// Set when the server offers a transport that failed the check, so GPU
  /// arrays are copied to the host: the reason, for one warning.
  std::optional<std::string> fallback_reason;
  std::string failed;  ///< with fallback_reason: the transport that failed
};

/// \brief The answer of the debug-mode /test endpoint.
struct TestOutcome {
  std::string status;   ///< "passed", "failed" or "error"
  std::string message;  ///< why it did not pass
  bool passed() const { return status == "passed"; }
};

class TesseractSession;

/// \brief A handle on one Tesseract. Copies and WithEncoding views share the
/// connections (and the served process, stopped with the last handle or by
/// Teardown). Thread-safe: calls from several threads run concurrently over a
/// pool of kept-alive connections (ClientOptions::connection_pool_size);
/// Teardown must not race with calls.
///
/// Errors: a 422 is kValidationError with a ValidationDetail (type, loc, msg per
/// issue) and a message printed as pydantic prints a ValidationError; a 406 is
/// kNotAcceptable naming what the server offers; other non-2xx answers carry an
/// HttpErrorDetail ("Error <status> from Tesseract: <body>"); an endpoint the
/// Tesseract lacks is kUnimplemented before any request; an unreachable server
/// kUnavailable; a timeout kDeadlineExceeded; an unreadable answer kDecodeError.
class Tesseract {
 public:
  /// \brief A Tesseract served at `url` ("host:port" gets http://). Nothing is
  /// sent until the first call.
  static Result<Tesseract> FromUrl(std::string_view url, ClientOptions options = {});

  /// \brief Starts a server for `path` and waits until it is healthy: a
  /// component library (lib<name>.so) is served by `tesscpp serve`, a
  /// tesseract_api.py by `tesseract-runtime serve`. kDeadlineExceeded (with the
  /// server's log) when it is not healthy within startup_timeout_s,
  /// kUnavailable when it exits first.
  static Result<Tesseract> FromSource(const std::string& path, const SourceOptions& options = {});

  /// \brief Runs a Tesseract image in a container (tesseract-core's from_image)
  /// and waits until it is healthy. The container is removed by Teardown, with
  /// the last handle, and when this process dies (a watcher outside it
  /// removes it). kUnavailable when no engine answers, kNotFound for a
  /// missing image, kInvalidArgument for an image that is not a Tesseract or
  /// bad options, kUnavailable for a port that is taken or a container that
  /// exits before it is healthy (with its log), kDeadlineExceeded (with its
  /// log) when it is not healthy in time.
  static Result<Tesseract> FromImage(const std::string& image, const ImageOptions& options = {});

  /// \brief Loads a component library into this process and calls it with no
  /// HTTP and no serialisation (tesseract-core's from_tesseract_api): the same
  /// validation, run directories and results as served.
  static Result<Tesseract> FromLibrary(const std::string& path, const LibraryOptions& options = {});

  /// \name Endpoints.
  /// @{
  Result<Value> Apply(const Value& inputs, const std::optional<std::string>& run_id = std::nullopt) const;
  Result<Value> AbstractEval(const Value& abstract_inputs) const;
  Result<Value> Health() const;
  Result<Value> Jacobian(const Value& inputs, const std::vector<std::string>& jac_inputs,
                         const std::vector<std::string>& jac_outputs,
                         const std::optional<std::string>& run_id = std::nullopt) const;
  Result<Value> JacobianVectorProduct(const Value& inputs, const std::vector<std::string>& jvp_inputs,
                                      const std::vector<std::string>& jvp_outputs,
                                      const Value& tangent_vector,
                                      const std::optional<std::string>& run_id = std::nullopt) const;
  Result<Value> VectorJacobianProduct(const Value& inputs, const std::vector<std::string>& vjp_inputs,
                                      const std::vector<std::string>& vjp_outputs,
                                      const Value& cotangent_vector,
                                      const std::optional<std::string>& run_id = std::nullopt) const;
  /// \brief tesscpp's Hessian-vector product (docs/derivatives.md): the
  /// derivative along `tangent_vector` of the VJP of `cotangent_vector`,
  /// keyed by hvp_inputs. kUnimplemented where the Tesseract lacks it (every
  /// tesseract-runtime).
  Result<Value> HessianVectorProduct(const Value& inputs, const std::vector<std::string>& hvp_inputs,
                                     const std::vector<std::string>& hvp_outputs, const Value& tangent_vector,
                                     const Value& cotangent_vector,
                                     const std::optional<std::string>& run_id = std::nullopt) const;
  /// \brief Posts a TestSpec to /test (debug mode only).
  Result<TestOutcome> Test(const Value& test_spec) const;
  /// \brief Posts `body`, a whole request, to the component endpoint named
  /// `endpoint` (its path without '/': "vector_jacobian_product"), which the
  /// typed methods above wrap: for requests forwarded as they are and
  /// endpoints without a typed method. kUnimplemented, in tesseract-core's
  /// words, for one the Tesseract does not serve (apply excepted: every
  /// Tesseract has it); kInvalidArgument for a name that is no endpoint.
  /// With `reuse`, the call takes part in forward reuse (ForwardReuse).
  Result<Value> Call(std::string_view endpoint, const Value& body,
                     const std::optional<std::string>& run_id = std::nullopt,
                     ForwardReuse* reuse = nullptr) const;
  /// @}

  /// \brief The OpenAPI document (fetched once per connection).
  Result<Value> OpenApiSchema() const;
  /// \brief The endpoints, from the document's paths ("apply", "health", ...).
  Result<std::vector<std::string>> AvailableEndpoints() const;
  /// \brief What the server advertises; nullopt for in-process Tesseracts,
  /// which pass arrays in memory.
  Result<std::optional<ServerCapabilities>> Capabilities() const;

  /// \brief A view requesting a different encoding, sharing this connection.
  /// Fields left nullopt keep this handle's. kInvalidArgument when the server
  /// cannot provide it (checked now, against its advertised capabilities).
  Result<Tesseract> WithEncoding(const RequestedEncoding& encoding) const;
  const RequestedEncoding& current_encoding() const { return encoding_; }

  /// \brief Whether `transport` ("cuda_ipc") works between this process and
  /// the server, found by trying (tesseract-core 1.15's /check_gpu_transport):
  /// 256 random bytes exported from this thread's current device must be read
  /// back reversed from the server's export. Run once per connection and
  /// transport, failures included; "none" always works. kInvalidArgument when
  /// the server does not offer it; an HTTP error is returned (not cached).
  /// In-process Tesseracts need no check.
  Result<GpuTransportCheck> CheckGpuTransport(const std::string& transport) const;

  /// \brief The transport GPU arrays should travel by, as the SDK's
  /// resolve_gpu_transport: a handle that requests one gets it if the check
  /// passes (kNotAcceptable naming the reason otherwise); a handle that
  /// requests none gets "cuda_ipc" when the server offers it and the check
  /// passes, else "none" with the reason set. In-process: the configured one.
  Result<GpuTransportChoice> ResolveGpuTransport() const;

  /// \brief For FromSource and FromImage: stops the server (removes the
  /// container) and its temporary directories now. kInvalidArgument when
  /// there is no server of its own to stop.
  Status Teardown();
  /// \brief For FromSource and FromImage: what the server printed (kept
  /// after teardown).
  Result<std::string> ServerLogs() const;
  /// \brief For FromImage: the container, as the engine describes it now.
  /// kInvalidArgument for other Tesseracts and after teardown.
  Result<ContainerInfo> GetContainerInfo() const;
  /// \brief The URL called ("" for in-process Tesseracts).
  std::string url() const;

 private:
  Tesseract(std::shared_ptr<TesseractSession> session, RequestedEncoding encoding);
  Result<Value> Send(std::string_view endpoint, const Value* payload,
                     const std::optional<std::string>& run_id, ForwardReuse* reuse = nullptr) const;
  // kUnimplemented, in tesseract-core's words, when `endpoint` is not served.
  Status RequireEndpoint(std::string_view endpoint) const;
  // The derivative endpoints: their request bodies differ only in names and
  // in the vectors they take (null where the endpoint takes none).
  Result<Value> CallGradient(std::string_view endpoint, const Value& inputs,
                             const std::vector<std::string>& in, const std::vector<std::string>& out,
                             const Value* tangent, const Value* cotangent,
                             const std::optional<std::string>& run_id) const;

  std::shared_ptr<TesseractSession> session_;
  RequestedEncoding encoding_;
};

}  // namespace tesscpp
