// runtime.h: serving a component as tesseract-core 1.15's runtime serves a
// tesseract_api.py — the endpoints, their request validation, output
// negotiation, run directories and errors — independent of any socket.
//
// The HTTP server (src/http) turns bytes on a connection into a RuntimeRequest
// and writes back the RuntimeResponse; the CLI's one-shot commands call the
// same Runtime, so both behave alike.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/forward_reuse.h"
#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp {

class ServedComponent;  // served_component.h: what every kind of component implements

/// \brief The runtime settings tesseract-core reads from TESSERACT_* variables.
struct RuntimeConfig {
  std::optional<std::string> name;         ///< TESSERACT_NAME (default: the component's name)
  std::optional<std::string> version;      ///< TESSERACT_VERSION (default: the component's version)
  std::optional<std::string> description;  ///< TESSERACT_DESCRIPTION, literal "\n" read as newline
  bool debug = false;                      ///< TESSERACT_DEBUG: tracebacks in 500s, /test
  std::string input_path = ".";            ///< TESSERACT_INPUT_PATH, made absolute
  std::string output_path = ".";           ///< TESSERACT_OUTPUT_PATH, made absolute
  std::string output_format = "json";      ///< TESSERACT_OUTPUT_FORMAT
  std::string compression = "none";        ///< TESSERACT_COMPRESSION ("none" or "lz4")
  bool profiling = false;                  ///< TESSERACT_PROFILING: timings into the run log
  bool tracing = false;                    ///< TESSERACT_TRACING: requests and results to stderr
  std::string gpu_transport = "none";      ///< TESSERACT_GPU_TRANSPORT: "none" or "cuda_ipc"
  double cuda_ipc_pool_fraction = 0.25;    ///< TESSERACT_CUDA_IPC_POOL_FRACTION, in [0, 1]
  std::string output_file;                 ///< TESSERACT_OUTPUT_FILE (one-shot commands only)
  /// TESSERACT_BINREF_OUTPUT_POOL_MB (tesscpp's): MiB of pre-faulted spare
  /// files for large json+binref answers, kept in `output_path` (0: none;
  /// docs/serving.md).
  int64_t binref_output_pool_mb = 0;
  /// TESSERACT_RESIDUAL_HOST_MB, _DEVICE_MB, _TTL_S (tesscpp's forward-reuse
  /// extension, docs/forward-reuse.md): per server process, the MiB of host
  /// and device memory what applies keep for their derivative calls may
  /// hold, and the seconds an entry lives. Both budgets 0: nothing is kept.
  int64_t residual_host_mb = 1024;
  int64_t residual_device_mb = 1024;
  int64_t residual_ttl_s = 600;
  /// tesscpp's, set by the one-shot commands (not from the environment): a
  /// call's run directory is `output_path` itself (logs/ and binref files
  /// there), as tesseract-runtime's CLI writes them, not `run_<id>/`.
  bool one_shot = false;
  /// TESSERACT_MLFLOW_TRACKING_URI: runs are tracked on this MLflow server
  /// (empty: in the run directories; docs/run-tracking.md).
  std::string mlflow_tracking_uri;
  /// TESSERACT_MLFLOW_RUN_EXTRA_ARGS: mlflow.start_run's keyword arguments,
  /// a dict literal (JSON, or Python's with True/False/None).
  std::string mlflow_run_extra_args;

  /// \brief Defaults overridden by the environment: TESSERACT_RUNTIME_<X> wins
  /// over TESSERACT_<X>, as tesseract-runtime's CLI has it. kInvalidArgument
  /// naming the variable for an unparsable boolean or an unknown format.
  static Result<RuntimeConfig> FromEnvironment();
  /// \brief Defaults overridden by `settings`, keyed by the variable's suffix
  /// in any case ({"debug", "1"}, {"output_path", "/tmp/out"}); the last of
  /// repeated keys wins. Errors as FromEnvironment.
  static Result<RuntimeConfig> FromSettings(const std::vector<std::pair<std::string, std::string>>& settings);

  /// \brief kInvalidArgument naming the setting that is not valid.
  Status Validate() const;
};

/// \brief One request as the server received it.
struct RuntimeRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< path and query, e.g. "/apply?run_id=abc"
  /// The Accept header; nullopt when absent.
  std::optional<std::string> accept;
  /// The Content-Type header; nullopt when absent. As in FastAPI, only JSON
  /// types (application/json, application/*+json) have their body parsed.
  std::optional<std::string> content_type;
  /// The body (padded buffers are parsed in place).
  Buffer body;
  /// The other headers (name, value) in the order received, for extensions
  /// such as the GPU transport's (docs/gpu-transport.md); names are
  /// matched case-insensitively.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct RuntimeResponse {
  int status = 200;
  std::string content_type = "application/json";
  Buffer body;
  /// Extra headers (e.g. Allow on a 405).
  std::vector<std::pair<std::string, std::string>> headers;
};

namespace runtime {

/// \brief The forward-reuse store of this process (docs/forward-reuse.md),
/// for /metrics: counts since the store was made, entries and bytes now.
struct ResidualStats {
  int64_t entries = 0;
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
  uint64_t kept = 0;       ///< entries stored
  uint64_t hits = 0;       ///< derivative calls that got their entry
  uint64_t misses = 0;     ///< references that led to nothing usable (recomputed)
  uint64_t evictions = 0;  ///< entries dropped for a budget or the time limit
  uint64_t released = 0;   ///< entries dropped because a client was done with them
  uint64_t refused = 0;    ///< kept state larger than a budget, never stored
};

}  // namespace runtime

class Runtime {
 public:
  /// \brief Serves a component of any kind through the interface every kind
  /// implements (a C++ Component: cpp_kind::MakeRuntime, tesscpp/internal/cpp_kind/cpp_kind.h).
  /// kInvalidArgument for a config that does not validate or a component
  /// without apply. `mlflow_runs` makes the runs of the component's endpoints
  /// when config.mlflow_tracking_uri is set (the client layer's
  /// MlflowRunLoggers; kInvalidArgument when it is set and none is given,
  /// unless the component tracks its runs itself).
  static Result<std::unique_ptr<Runtime>> Make(std::shared_ptr<const ServedComponent> component,
                                               RuntimeConfig config,
                                               component::RunLoggerFactory mlflow_runs = nullptr);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// \brief Answers one request. Never fails: every problem is a response
  /// (404, 405, 406, 413, 422, 500). Thread-safe; endpoint calls may run
  /// concurrently only where the component allows it (see the server notes).
  RuntimeResponse Handle(const RuntimeRequest& request) const;

  /// \brief Runs `endpoint` in-process on `payload`, the request body as a
  /// Value tree whose arrays may be Tensors (no HTTP, no serialisation): what
  /// the client's from_library uses, as tesseract-core's in-process client.
  /// The payload is validated with the endpoint's request model and the
  /// outputs with its output model; apply and the gradient endpoints run in
  /// `<output_path>/run_<run_id or uuid4>` with their stdio in its log.
  /// kValidationError with a ValidationDetail (loc from the payload's root),
  /// kUnimplemented for an endpoint the component lacks, and the endpoint's
  /// own code for its failures ("Error running Tesseract API <endpoint>: ...").
  /// With `reuse`, the call takes part in forward reuse as an HTTP request
  /// with the extension's headers does (filled in place; the inputs an apply
  /// keeps at are copied, since the caller's arrays are only lent).
  Result<Value> Call(std::string_view endpoint, const Value& payload,
                     const std::optional<std::string>& run_id = std::nullopt,
                     ForwardReuse* reuse = nullptr) const;

  /// \brief What a one-shot command leaves in the output directory whatever it
  /// runs, as tesseract-runtime's do: `logs/` with an empty tesseract.log and
  /// metrics.csv's header (POST commands get them with their call).
  Status MakeOneShotLogs() const;
  /// \brief The served endpoints, in the OpenAPI document's order ("test" in debug mode).
  const std::vector<std::string>& endpoints() const;
  /// \brief The OpenAPI document as served at /openapi.json.
  const Buffer& openapi_document() const;

  const RuntimeConfig& config() const;
  /// \brief Its forward-reuse store's counts (all zero when it keeps nothing).
  runtime::ResidualStats residual_stats() const;

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tesscpp
