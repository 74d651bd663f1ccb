// http_session.cc: calls over HTTP as tesseract-core 1.15's SDK makes them:
// Accept header, arraydicts in the body, binref input files, decoding of the
// answer and of its errors.
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "client/binref_pool.h"
#include "client/http_connection.h"
#include "client/log_streamer.h"
#include "client/response_errors.h"
#include "client/served_server.h"
#include "client/session.h"
#include "gpu_transport/session_transports.h"
#include "platform/phase_trace.h"
#include "platform/uuid.h"
#include "runtime/reuse_headers.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::client {

std::string RunLogPath(const std::string& output_path, const std::string& run_id) {
  return (std::filesystem::path(output_path) / ("run_" + run_id) / "logs" / "tesseract.log").string();
}

bool IsWrappedEndpoint(std::string_view endpoint) {
  const std::optional<core::EndpointId> id = core::FindEndpoint(endpoint);
  return id && core::Endpoint(*id).kind == core::EndpointKind::kWrapped;
}

namespace {

using client::HttpConnection;
using client::HttpResponse;

// How a request body is written, parsed once from the encoding fitted to
// the server; a name this client does not implement is refused here.
struct BodyEncoding {
  std::string transport{gpu_transport::kNoTransport};  // device arrays by a GPU transport's descriptors
  Compression compression = Compression::kNone;        // of base64 and binref arrays
  bool binref = false;                                 // json+binref asked for: inputs as files too
};

Result<BodyEncoding> BodyEncodingOf(const RequestedEncoding& encoding) {
  BodyEncoding body;
  if (encoding.gpu_transport) body.transport = *encoding.gpu_transport;  // checked as the call begins
  if (encoding.compression) {
    auto compression = CompressionFromName(*encoding.compression);
    if (!compression.ok()) {
      return Status::InvalidArgument("compression: this client does not implement '", *encoding.compression,
                                     "' (", CompressionChoices(NameList::kPlain), ")");
    }
    body.compression = *compression;
  }
  if (encoding.output_format) {
    auto format = OutputFormatFromName(*encoding.output_format);
    if (!format.ok()) return format.status().WithContext("output_format");
    body.binref = *format == OutputFormat::kJsonBinref;
  }
  return body;
}

// tesscpp's forward-reuse headers (runtime/reuse_headers.h). A reference is
// a server's token; one that is not (it could inject a header) is not sent,
// and the call recomputes as a call that names none.
bool Usable(const std::string& reference) {
  return !reference.empty() && reference.find_first_not_of("0123456789abcdefABCDEF-._") == std::string::npos;
}

void AddReuseHeaders(const ForwardReuse& reuse, std::vector<std::string>& headers) {
  if (reuse.keep) {
    headers.push_back(std::string(runtime::kKeepHeader) + ": 1");
  } else if (Usable(reuse.residuals)) {
    headers.push_back(std::string(runtime::kResidualsHeader) + ": " + reuse.residuals);
  }
  std::string release;
  for (const std::string& reference : reuse.release) {
    if (Usable(reference)) release += (release.empty() ? "" : ",") + reference;
  }
  if (!release.empty()) headers.push_back(std::string(runtime::kResidualsReleaseHeader) + ": " + release);
}

// The connection a call takes part in forward reuse on (a connection is
// served by one worker): an apply's is parked under the reference it gets; a
// derivative call goes on the connection parked under its reference and,
// when that reached the state, parks it there again for the next call at
// that point. A call that releases references goes on the connection of the
// first one, so that its worker hears it. A derivative call that releases its
// own reference (the server frees it after the call) takes that connection
// before anything is forgotten and parks it under nothing afterwards.
std::optional<HttpConnection::Affinity> AffinityOf(const ForwardReuse* reuse) {
  if (reuse == nullptr) return std::nullopt;
  HttpConnection::Affinity affinity;
  const bool refers = !reuse->keep && Usable(reuse->residuals);
  bool releases_own = false;
  for (const std::string& done : reuse->release) {
    if (refers && done == reuse->residuals) {
      releases_own = true;
    } else {
      affinity.forget.push_back(done);
    }
  }
  if (reuse->keep) {
    affinity.park_as = [](const HttpResponse& r) { return r.Header(runtime::kResidualsHeader).value_or(""); };
  } else if (refers) {
    affinity.use = reuse->residuals;
    if (!releases_own) {
      affinity.park_as = [reference = reuse->residuals](const HttpResponse& r) {
        return r.Header(runtime::kResidualsUsedHeader) == "hit" ? reference : std::string();
      };
    }
  }
  if (affinity.use.empty() && !reuse->release.empty()) affinity.use = reuse->release.front();
  return affinity;
}

void ReadReuseHeaders(const HttpResponse& response, ForwardReuse& reuse) {
  if (reuse.keep) {
    reuse.residuals = response.Header(runtime::kResidualsHeader).value_or("");
  } else if (!reuse.residuals.empty()) {
    reuse.used = response.Header(runtime::kResidualsUsedHeader).value_or("");
  }
}

class HttpSession final : public TesseractSession {
 public:
  HttpSession(std::unique_ptr<HttpConnection> connection, ClientOptions options,
              std::unique_ptr<ServedServer> server)
      : connection_(std::move(connection)), options_(std::move(options)), server_(std::move(server)) {
    transports_ = std::make_unique<gpu_transport::SessionTransports>(
        gpu_transport::ClientTransportOptions{options_.cuda_ipc_events, server_});
    if (options_.binref_pool && !options_.server_input_path.empty()) {
      pool_ = std::make_unique<client::BinrefPool>(options_.server_input_path);
    }
  }
  ~HttpSession() override {
    FlushExportsDone();
    connection_.reset();  // before the server it talks to goes
    pool_.reset();
    server_.reset();
  }

  Result<Value> Run(std::string_view endpoint, const Value* payload, const std::optional<std::string>& run_id,
                    const RequestedEncoding& requested, ForwardReuse* reuse) override;
  Result<std::shared_ptr<const Value>> OpenApi() override;
  Result<std::optional<ServerCapabilities>> Capabilities() override {
    TESS_ASSIGN_OR_RETURN(const ServerCapabilities* c, FetchCapabilities());
    return std::optional<ServerCapabilities>(*c);
  }
  Status CheckRequestedEncoding(const RequestedEncoding& requested) override {
    TESS_ASSIGN_OR_RETURN(const ServerCapabilities* c, FetchCapabilities());
    return FitEncodingToServer(requested, *c).status();
  }
  Status Teardown() override {
    if (server_ == nullptr && held_server_.expired()) return TesseractSession::Teardown();
    FlushExportsDone();
    connection_.reset();
    if (server_.use_count() == 1) {
      server_->Stop();
    } else if (server_ != nullptr) {
      // Outputs borrowed from the server read its memory: it keeps running
      // until the last of them is gone (they hold it).
      held_server_ = server_;
      server_.reset();
    }
    return Status::OK();
  }
  Result<std::string> ServerLogs() override {
    std::shared_ptr<ServedServer> server = server_ != nullptr ? server_ : held_server_.lock();
    if (server == nullptr) return TesseractSession::ServerLogs();
    return server->Logs();
  }
  Result<ContainerInfo> GetContainerInfo() override {
    if (server_ == nullptr || server_->process == nullptr) return TesseractSession::GetContainerInfo();
    return server_->process->Describe();
  }
  std::string url() const override { return url_; }
  Result<GpuTransportCheck> CheckGpuTransport(const std::string& transport) override;

 private:
  // Read from the OpenAPI document, once per connection (as the SDK).
  Result<const ServerCapabilities*> FetchCapabilities() {
    TESS_RETURN_IF_ERROR(OpenApi().status());
    std::lock_guard<std::mutex> lock(openapi_mutex_);
    return &*capabilities_;
  }
  Result<Buffer> EncodeBody(const Value& payload, const BodyEncoding& encoding, BinrefSink** sink,
                            std::unique_ptr<BinrefWriter>* files,
                            std::unique_ptr<client::BinrefPool::Lease>* lease,
                            DeviceArrayWriter* device_exports);
  // `device_arrays`: how the GPU transport reads device outputs (null: refused).
  Result<Value> Decode(const HttpResponse& response, std::string_view endpoint,
                       DeviceArrayReader* device_arrays = nullptr);
  void FlushExportsDone();
  // The run_id a request names: the given one, or a new one where the run
  // log is streamed (it is read from the run's directory).
  Result<std::optional<std::string>> RunIdFor(std::string_view endpoint,
                                              const std::optional<std::string>& given) const;
  Result<GpuTransportCheck> RunTransportCheck(const std::string& transport);
  Result<HttpConnection*> Connection() {
    if (connection_ == nullptr) return Status::Unavailable("this Tesseract has been torn down");
    return connection_.get();
  }

  std::unique_ptr<HttpConnection> connection_;
  ClientOptions options_;
  std::shared_ptr<ServedServer> server_;     // shared with borrowed outputs
  std::weak_ptr<ServedServer> held_server_;  // torn down, running while borrowed outputs live
  std::unique_ptr<client::BinrefPool> pool_;
  std::string url_ = connection_ != nullptr ? connection_->base_url() : "";
  std::mutex openapi_mutex_;
  std::shared_ptr<const Value> openapi_;
  std::optional<ServerCapabilities> capabilities_;
  std::unique_ptr<gpu_transport::SessionTransports> transports_;  // what GPU transports add to requests
  std::mutex check_mutex_;
  std::map<std::string, GpuTransportCheck> checks_;  // by transport
};

void HttpSession::FlushExportsDone() {
  if (connection_ == nullptr) return;
  const std::optional<std::vector<std::string>> headers = transports_->Closing();
  if (!headers) return;
  // Best effort: a server that is gone frees what it holds after its timeout.
  (void)connection_->Send("GET", "/health", *headers, nullptr);
}

Result<std::optional<std::string>> HttpSession::RunIdFor(std::string_view endpoint,
                                                         const std::optional<std::string>& given) const {
  std::optional<std::string> run_id = given;
  if (options_.stream_logs && client::IsWrappedEndpoint(endpoint)) {
    if (options_.server_output_path.empty()) {
      return Status::InvalidArgument("stream_logs needs server_output_path: the run log is read from there");
    }
    if (!run_id) run_id = platform::NewUuid4();
  }
  if (run_id && run_id->find_first_of("&#% +?") != std::string::npos) {
    return Status::InvalidArgument("run_id '", *run_id, "' holds characters that would need URL escaping");
  }
  return run_id;
}

Result<std::shared_ptr<const Value>> HttpSession::OpenApi() {
  std::lock_guard<std::mutex> lock(openapi_mutex_);
  if (openapi_ != nullptr) return openapi_;
  TESS_ASSIGN_OR_RETURN(HttpConnection * connection, Connection());
  TESS_ASSIGN_OR_RETURN(HttpResponse response, connection->Send("GET", "/openapi.json", {}, nullptr));
  TESS_ASSIGN_OR_RETURN(Value document, Decode(response, "openapi.json"));
  capabilities_ = ServerCapabilities::FromOpenApi(document);
  openapi_ = std::make_shared<const Value>(std::move(document));
  return openapi_;
}

Result<Buffer> HttpSession::EncodeBody(const Value& payload, const BodyEncoding& encoding, BinrefSink** sink,
                                       std::unique_ptr<BinrefWriter>* files,
                                       std::unique_ptr<client::BinrefPool::Lease>* lease,
                                       DeviceArrayWriter* device_exports) {
  JsonWriteOptions write;
  write.arrays.object_type = false;  // as the SDK sends them
  // Device tensors go through the GPU transport when one is requested
  // (`device_exports`), else as host copies.
  write.arrays.device_arrays = device_exports;
  write.arrays.encoding = ArrayEncoding::kBase64;
  write.arrays.compression = encoding.compression;
  if (encoding.binref && (pool_ != nullptr || !options_.server_input_path.empty())) {
    if (pool_ != nullptr) {
      *lease = std::make_unique<client::BinrefPool::Lease>(pool_.get());
      *sink = lease->get();
    } else {
      // One file per array, "name:0", removed after the call (as the SDK).
      *files = std::make_unique<BinrefWriter>(options_.server_input_path, "", 0);
      *sink = files->get();
    }
    write.arrays.encoding = ArrayEncoding::kBinref;
    write.arrays.binref = *sink;
  }
  return WriteJson(payload, write);
}

Result<Value> HttpSession::Run(std::string_view endpoint, const Value* payload,
                               const std::optional<std::string>& given_run_id,
                               const RequestedEncoding& requested, ForwardReuse* reuse) {
  platform::PhaseTrace trace("client", endpoint);
  const bool is_get = endpoint == "health";
  RequestedEncoding encoding = requested;
  // GPU transports are opt-in: POSTs name "none", since 1.13/1.14 runtimes
  // would otherwise use the one they serve.
  if (!encoding.gpu_transport && !is_get) encoding.gpu_transport = "none";
  if (encoding.gpu_transport || encoding.compression) {
    TESS_ASSIGN_OR_RETURN(const ServerCapabilities* capabilities, FetchCapabilities());
    TESS_ASSIGN_OR_RETURN(encoding, FitEncodingToServer(std::move(encoding), *capabilities));
  }
  std::vector<std::string> headers;
  const std::optional<std::string> accept = is_get ? std::nullopt : encoding.AcceptHeader();
  if (accept) headers.push_back("Accept: " + *accept);
  if (!is_get) headers.emplace_back("Content-Type: application/json");
  if (reuse != nullptr) AddReuseHeaders(*reuse, headers);
  TESS_ASSIGN_OR_RETURN(const BodyEncoding body_encoding, BodyEncodingOf(encoding));

  TESS_ASSIGN_OR_RETURN(const std::optional<std::string> run_id, RunIdFor(endpoint, given_run_id));
  std::optional<client::LogStreamer> streamer;
  std::string target = "/" + std::string(endpoint);
  if (run_id) target += "?run_id=" + *run_id;  // uuids and names: nothing to escape in practice

  BinrefSink* sink = nullptr;
  std::unique_ptr<BinrefWriter> files;
  std::unique_ptr<client::BinrefPool::Lease> lease;
  Buffer body;
  TESS_ASSIGN_OR_RETURN(const std::unique_ptr<gpu_transport::ClientCall> gpu,
                        transports_->Begin(body_encoding.transport));
  if (payload != nullptr) {
    auto encoded = EncodeBody(*payload, body_encoding, &sink, &files, &lease, gpu->inputs());
    if (!encoded.ok())
      return encoded.status().WithContext("encoding the request to " + std::string(endpoint));
    body = *std::move(encoded);
  }
  platform::PhaseTrace::Mark("encode");
  // Input files go whatever happens once they were written.
  struct RemoveFiles {
    const std::unique_ptr<BinrefWriter>& writer;
    ~RemoveFiles() {
      if (writer == nullptr) return;
      std::error_code ignored;
      for (const std::string& f : writer->files()) std::filesystem::remove(f, ignored);
    }
  } remove_files{files};

  TESS_ASSIGN_OR_RETURN(HttpConnection * connection, Connection());
  auto transport_headers = gpu->Headers(payload);
  if (!transport_headers.ok())
    return transport_headers.status().WithContext("encoding the request to " + std::string(endpoint));
  headers.insert(headers.end(), transport_headers->begin(), transport_headers->end());
  Result<HttpResponse> response = Status::Internal("not sent");
  {
    if (options_.stream_logs && run_id && client::IsWrappedEndpoint(endpoint)) {
      streamer.emplace(client::RunLogPath(options_.server_output_path, *run_id), options_.stream_logs);
    }
    const std::optional<HttpConnection::Affinity> affinity = AffinityOf(reuse);
    response = connection->Send(is_get ? "GET" : "POST", target, headers,
                                payload != nullptr ? &body : nullptr, affinity ? &*affinity : nullptr);
    platform::PhaseTrace::Mark("http");
    streamer.reset();
  }
  if (!response.ok()) {
    gpu->Unanswered();
    return response.status();
  }
  auto device_outputs =
      gpu->Answered(response->status, [&](std::string_view name) { return response->Header(name); });
  if (!device_outputs.ok())
    return device_outputs.status().WithContext("waiting for the GPU work of " + std::string(endpoint));
  if (response->status < 200 || response->status >= 300)
    return client::ErrorFromResponse(*response, endpoint, accept);
  auto value = Decode(*response, endpoint, *device_outputs);
  if (value.ok()) gpu->Decoded(*value);
  if (value.ok() && reuse != nullptr) ReadReuseHeaders(*response, *reuse);
  platform::PhaseTrace::Mark("decode");
  return value;
}

Result<GpuTransportCheck> HttpSession::CheckGpuTransport(const std::string& transport) {
  std::lock_guard<std::mutex> lock(check_mutex_);
  if (auto it = checks_.find(transport); it != checks_.end()) return it->second;
  TESS_ASSIGN_OR_RETURN(GpuTransportCheck check, RunTransportCheck(transport));
  checks_.emplace(transport, check);
  return check;
}

Result<GpuTransportCheck> HttpSession::RunTransportCheck(const std::string& transport) {
  auto post = [&](const Buffer& body) -> Result<gpu_transport::CheckAnswer> {
    TESS_ASSIGN_OR_RETURN(HttpConnection * connection, Connection());
    TESS_ASSIGN_OR_RETURN(HttpResponse response, connection->Send("POST", "/check_gpu_transport",
                                                                  {"Content-Type: application/json"}, &body));
    auto answered = std::make_shared<HttpResponse>(std::move(response));
    return gpu_transport::CheckAnswer{answered->status, answered->body,
                                      [answered](std::string_view name) { return answered->Header(name); }};
  };
  TESS_ASSIGN_OR_RETURN(gpu_transport::CheckOutcome outcome,
                        transports_->Check(transport, "The Tesseract at " + url_, post));
  return GpuTransportCheck{outcome.works, std::move(outcome.reason)};
}

Result<Value> HttpSession::Decode(const HttpResponse& response, std::string_view endpoint,
                                  DeviceArrayReader* device_arrays) {
  if (response.status < 200 || response.status >= 300)
    return client::ErrorFromResponse(response, endpoint, std::nullopt);
  JsonReadOptions read;
  std::vector<std::string> mapped;
  if (client::IsWrappedEndpoint(endpoint)) {
    read.arrays = ArrayDetection::kTagged;
    read.array_options.accept_raw = true;
    read.array_options.binref_dir = options_.server_output_path;
    if (pool_ != nullptr) read.array_options.borrowed_binref_files = &mapped;
    read.array_options.device_arrays = device_arrays;
  }
  auto value = ReadJson(response.body, read);
  if (!value.ok()) {
    if (value.status().message().find("binref") != std::string::npos && options_.server_output_path.empty()) {
      return Status::InvalidArgument(
          "the answer of ", endpoint,
          " holds json+binref arrays, which need server_output_path: ", value.status().message());
    }
    return Status(value.status().code(), "cannot decode the answer of " + std::string(endpoint) + " from " +
                                             url_ + ": " + value.status().message());
  }
  // Mapped outputs keep their pages; the names go so files do not pile up.
  std::error_code ignored;
  for (const std::string& f : mapped) std::filesystem::remove(f, ignored);
  return value;
}

}  // namespace

Result<std::shared_ptr<TesseractSession>> MakeHttpSession(const std::string& url, ClientOptions options,
                                                          std::unique_ptr<ServedServer> server) {
  TESS_ASSIGN_OR_RETURN(
      auto connection,
      HttpConnection::Open(client::SanitizeUrl(url), {options.connect_timeout_s, options.read_timeout_s},
                           options.connection_pool_size, client::AuthorizationHeaders(options.token)));
  return std::shared_ptr<TesseractSession>(
      std::make_shared<HttpSession>(std::move(connection), std::move(options), std::move(server)));
}

}  // namespace tesscpp::client
