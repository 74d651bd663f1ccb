// library_session.cc: Tesseract::FromLibrary — a component library loaded
// into this process and called through the Runtime's in-process entry, with
// no HTTP and no serialisation (tesseract-core's LocalClient).
#include <filesystem>
#include <mutex>

#include "client/log_streamer.h"
#include "client/session.h"
#include "platform/phase_trace.h"
#include "platform/uuid.h"
#include "tesscpp/internal/client/mlflow_runs.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/device_values.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/platform/file.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::client {
namespace {

class LibrarySession final : public TesseractSession {
 public:
  LibrarySession(std::shared_ptr<const ComponentLibrary> library, std::unique_ptr<Runtime> runtime,
                 std::string gpu_transport, LogSink stream_logs, std::string scratch_dir)
      : library_(std::move(library)),
        runtime_(std::move(runtime)),
        gpu_transport_(std::move(gpu_transport)),
        stream_logs_(std::move(stream_logs)),
        scratch_dir_(std::move(scratch_dir)) {}
  ~LibrarySession() override {
    runtime_.reset();  // the component's code lives in the library
    library_.reset();
    std::error_code ignored;
    if (!scratch_dir_.empty()) std::filesystem::remove_all(scratch_dir_, ignored);
  }

  Result<Value> Run(std::string_view endpoint, const Value* payload,
                    const std::optional<std::string>& given_run_id,
                    const RequestedEncoding& /*encoding: arrays pass in memory*/,
                    ForwardReuse* reuse) override {
    platform::PhaseTrace trace("in-process", endpoint);
    std::optional<std::string> run_id = given_run_id;
    std::optional<client::LogStreamer> streamer;
    if (stream_logs_ && client::IsWrappedEndpoint(endpoint)) {
      if (!run_id) run_id = platform::NewUuid4();
      streamer.emplace(client::RunLogPath(runtime_->config().output_path, *run_id), stream_logs_);
    }
    if (payload == nullptr) return runtime_->Call(endpoint, Value(), run_id);
    if (gpu_transport_ == "none" && core::HoldsDeviceTensors(*payload)) {
      // Without a GPU transport a component sees host arrays, as if served.
      Value host_payload = *payload;
      TESS_RETURN_IF_ERROR(core::MoveDeviceTensorsToHost(host_payload));
      return runtime_->Call(endpoint, host_payload, run_id, reuse);
    }
    return runtime_->Call(endpoint, *payload, run_id, reuse);
  }
  Result<GpuTransportCheck> CheckGpuTransport(const std::string& /*transport*/) override {
    return GpuTransportCheck{true, ""};  // arrays pass in memory
  }
  std::optional<std::string> InProcessTransport() const override { return gpu_transport_; }

  Result<std::shared_ptr<const Value>> OpenApi() override {
    std::lock_guard<std::mutex> lock(openapi_mutex_);
    if (openapi_ == nullptr) {
      TESS_ASSIGN_OR_RETURN(Value document, ReadJson(runtime_->openapi_document()));
      openapi_ = std::make_shared<const Value>(std::move(document));
    }
    return openapi_;
  }
  Result<std::optional<ServerCapabilities>> Capabilities() override {
    return std::optional<ServerCapabilities>();
  }

  Status CheckRequestedEncoding(const RequestedEncoding& requested) override {
    const auto& transport = requested.gpu_transport;
    if (transport && *transport != "none" && *transport != gpu_transport_) {
      return Status::InvalidArgument("This in-process Tesseract does not accept gpu_transport='", *transport,
                                     "', since it was created with gpu_transport='", gpu_transport_,
                                     "'. Create it with FromLibrary(..., {.gpu_transport = \"", *transport,
                                     "\"}) if its endpoints accept GPU arrays.");
    }
    return Status::OK();
  }

 private:
  std::shared_ptr<const ComponentLibrary> library_;
  std::unique_ptr<Runtime> runtime_;
  std::string gpu_transport_;
  LogSink stream_logs_;
  std::string scratch_dir_;
  std::mutex openapi_mutex_;
  std::shared_ptr<const Value> openapi_;
};

}  // namespace

Result<std::shared_ptr<TesseractSession>> MakeLibrarySession(const std::string& path,
                                                             const LibraryOptions& options) {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<const ComponentLibrary> library, ComponentLibrary::Open(path));
  std::shared_ptr<const Component> component(library, &library->component());
  // Debug mode unless the settings say otherwise, as the SDK's in-process Tesseract: /test available.
  std::vector<std::pair<std::string, std::string>> settings{{"debug", "1"}};
  settings.insert(settings.end(), options.runtime_config.begin(), options.runtime_config.end());
  if (options.gpu_transport) settings.emplace_back("gpu_transport", *options.gpu_transport);
  std::string scratch;
  if (options.output_path.empty()) {
    TESS_ASSIGN_OR_RETURN(scratch, platform::MakeScratchDir("tesseract_output_"));
    settings.emplace_back("output_path", scratch);
  } else {
    std::error_code ec;
    std::filesystem::create_directories(options.output_path, ec);
    settings.emplace_back("output_path", options.output_path);
  }
  auto config = RuntimeConfig::FromSettings(settings);
  Result<component::RunLoggerFactory> mlflow_runs =
      config.ok() ? MlflowRunLoggers(*config) : Result<component::RunLoggerFactory>(config.status());
  auto runtime = mlflow_runs.ok() ? cpp_kind::MakeRuntime(component, *config, *std::move(mlflow_runs))
                                  : mlflow_runs.status();
  if (!runtime.ok()) {
    std::error_code ignored;
    if (!scratch.empty()) std::filesystem::remove_all(scratch, ignored);
    return runtime.status();
  }
  return std::shared_ptr<TesseractSession>(std::make_shared<LibrarySession>(
      std::move(library), *std::move(runtime), config->gpu_transport, options.stream_logs, scratch));
}

}  // namespace tesscpp::client
