// Runtime: routing, body reading, negotiation, run directories and the
// endpoint calls of a served component of any kind. Its answers' shapes are
// in answers.h, the query and Content-Type rules in request_rules.h, how a
// failing call is caught and reported in endpoint_failure.h.
#include "tesscpp/internal/runtime/runtime.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>

#include <unistd.h>

#include "core/http_status.h"
#include "gpu_transport/registry.h"
#include "gpu_transport/server_transport.h"
#include "platform/http_headers.h"
#include "platform/phase_trace.h"
#include "platform/uuid.h"
#include "runtime/answers.h"
#include "runtime/binref_output_pool.h"
#include "runtime/docs_page.h"
#include "runtime/endpoint_failure.h"
#include "runtime/file_run_logger.h"
#include "runtime/json_error.h"
#include "runtime/negotiate.h"
#include "runtime/per_process.h"
#include "runtime/request_rules.h"
#include "runtime/residual_store.h"
#include "runtime/reuse_headers.h"
#include "runtime/run_dir.h"
#include "runtime/run_dir_pool.h"
#include "runtime/test_spec_runner.h"
#include "schema/validate.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/device_values.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/runtime/failure_details.h"
#include "tesscpp/internal/runtime/served_component.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp {

using core::EndpointId;
using runtime::Detail;
using runtime::Encoding;
using runtime::EndpointFailure;
using runtime::FailureOf;
using runtime::Guarded;
using runtime::IsJsonContentType;
using runtime::JsonResponse;
using runtime::MissingBody;
using runtime::OsError;
using runtime::QueryParam;
using runtime::Unprocessable;

namespace {

// Frees a call's own forward-reuse reference once the call has run, when the
// call asked to (it named the reference among those it releases).
struct ReleaseAfter {
  explicit ReleaseAfter(runtime::ResidualStore* residuals) : store(residuals) {}
  runtime::ResidualStore* store;
  std::string reference;
  ReleaseAfter(const ReleaseAfter&) = delete;
  ReleaseAfter& operator=(const ReleaseAfter&) = delete;
  ~ReleaseAfter() {
    if (store != nullptr && !reference.empty()) store->Release(reference);
  }
};

// What Create made, or null after saying on stderr what goes without it.
template <typename T>
std::unique_ptr<T> OrWarned(Result<std::unique_ptr<T>> made, const char* without) {
  if (made.ok()) return *std::move(made);
  std::cerr << "tesscpp: " << without << ": " << made.status().message() << "\n";
  return nullptr;
}

ValidationIssue RunIdIssue(const std::string& run_id) {
  return {"value_error",
          {Value("query"), Value("run_id")},
          "Value error, run_id must be a non-empty name without '/'",
          Value(run_id),
          Value::Dict{{"error", Value::Dict{}}}};
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

struct Runtime::Impl {
  std::shared_ptr<const ServedComponent> component;
  RuntimeConfig config;
  runtime::Offer offer;
  std::array<bool, core::kEndpointCount> is_served{};  // by EndpointId
  std::vector<std::string> endpoints;                  // the served names, in the table's order
  // Built once; every response shares these bytes.
  Buffer openapi_body;
  Buffer docs_body;
  Buffer health_body = Buffer::FromString(R"({"status":"ok"})");
  // The GPU transport's server side; null unless one is enabled.
  mutable std::unique_ptr<gpu_transport::ServerTransport> transport;
  // The runs of wrapped endpoints: run directories, or an MLflow server's.
  component::RunLoggerFactory run_loggers;

  // Spare files for large json+binref answers (TESSERACT_BINREF_OUTPUT_POOL_MB),
  // made by the first binref answer of each process: one-shot commands never
  // need them.
  mutable runtime::PerProcess<runtime::BinrefOutputPool> binref_pool;
  // Spare run directories for calls without a run_id, made by the first
  // such call of each process.
  mutable runtime::PerProcess<runtime::RunDirectoryPool> run_pool;
  // What applies kept for their derivative calls (docs/forward-reuse.md);
  // null when both budgets are 0.
  std::unique_ptr<runtime::ResidualStore> residuals;

  bool gpu_transport_enabled() const { return transport != nullptr; }
  bool Serves(EndpointId id) const { return is_served[static_cast<int>(id)]; }
  // Where a binref answer's large files come from: the pool when there is one.
  BinrefWriter::FileSource BinrefFiles() const;
  RuntimeResponse CheckGpuTransport(const RuntimeRequest& request) const;

  RuntimeResponse Route(const RuntimeRequest& request) const;
  RuntimeResponse Post(const core::EndpointInfo& endpoint, const RuntimeRequest& request,
                       std::string_view query) const;
  // A request body as read: the Value, or the answer that refuses it. A null
  // Value and no answer: a `text_kind` component reads the text itself.
  struct ReadBody {
    Value value;
    std::optional<RuntimeResponse> refusal;
  };
  ReadBody ReadRequestBody(const RuntimeRequest& request, bool text_kind,
                           DeviceArrayReader* device_arrays) const;
  // Runs a wrapped endpoint: negotiation, run directory, stdio capture,
  // profiling; `call` produces the validated outputs from `request_body`, and
  // `gpu` is the GPU transport's part of the call (null without one).
  // `inputs_owned`: the call runs on KeptApplyBody's copy of the request's inputs.
  RuntimeResponse RunWrapped(EndpointId id, const std::string& endpoint, const RuntimeRequest& request,
                             std::string_view query, const Value& request_body,
                             const runtime::PreparedCall& call,
                             std::unique_ptr<gpu_transport::ServerCall> gpu, bool inputs_owned) const;
  RuntimeResponse Failure(const std::string& endpoint, const EndpointFailure& failure) const;
  // The run directory of a call: the given run_id's, made now, or a spare
  // under a fresh uuid4; a one-shot command's is the output directory.
  Result<runtime::RunDirectoryPool::PreparedRun> OpenRun(
      const std::optional<std::string>& given_run_id) const;
  runtime::RunDirectoryPool* RunPool() const;
  struct RunOutcome {
    std::string run_id;
    Result<Value> outputs = Status::Internal("not run");
  };
  // Opens the run directory, captures stdio into its log and runs `call`.
  RunOutcome RunInRunDirectory(const std::string& endpoint, const std::optional<std::string>& given_run_id,
                               const runtime::PreparedCall& call, runtime::CallContext context = {}) const;
  // Forward reuse around one wrapped call: what the call gets (`context`)
  // and, once it ran, the answer's headers.
  struct Reuse {
    const Value* inputs = nullptr;  // the request's "inputs"
    bool keep = false;              // an apply the client asked to keep
    Value kept_at;                  // its inputs as they were before it ran
    component::Residual kept;       // what it kept
    bool referred = false;          // a derivative call named a reference
    std::shared_ptr<const component::Residual> found;
    std::string_view miss;  // why it found nothing, when it referred
  };
  // A kept apply's state may hold its inputs (a pullback saves them), while
  // device inputs are the caller's memory, lent for this one call: such an
  // apply runs on the server's own copy of them (runtime::OwnDeviceCopy).
  // The body to run it on; nullopt where no copy is needed or none could be
  // made (the apply then keeps nothing).
  std::optional<Value> KeptApplyBody(EndpointId endpoint, bool keep, const Value& request_body) const;
  // What a call asks, from an HTTP request's headers or an in-process call's
  // ForwardReuse: `keep` (an apply), or the reference a derivative call
  // names. `lent`: the inputs are the caller's memory for this call only;
  // `inputs_owned`: the call runs on KeptApplyBody's copy of them.
  Reuse BeginReuse(EndpointId endpoint, bool keep, std::optional<std::string_view> reference,
                   const Value& request_body, bool lent, bool inputs_owned) const;
  // After a call that succeeded: stores what an apply kept, and says the
  // reference (`residuals`) or what the reference was good for (`used`).
  void FinishReuse(Reuse& reuse, ForwardReuse& said) const;
  // The 422 for a run_id that would leave the output directory, if it does.
  static std::optional<RuntimeResponse> InvalidRunId(const std::string& run_id);
  Result<Value> CallInProcess(std::string_view endpoint, const Value& payload,
                              const std::optional<std::string>& run_id, ForwardReuse* reuse) const;
  // /test: runs `endpoint` on `payload` in-process, failures named as the
  // Python exceptions a tesseract-core user would see.
  runtime::EndpointOutcome RunForTest(const std::string& endpoint, const Value& payload) const;
};

runtime::EndpointOutcome Runtime::Impl::RunForTest(const std::string& endpoint, const Value& payload) const {
  runtime::EndpointOutcome outcome;
  // RunTestSpec names served component endpoints only.
  auto call = Guarded([&] { return component->Prepare(*core::FindEndpoint(endpoint), payload, {}); });
  // A validation that threw is the call's failure, not the payload's.
  if (!call.ok() && runtime::GetExceptionDetail(call.status()) == nullptr) {
    const ValidationDetail* detail = GetValidationDetail(call.status());
    outcome.invalid_payload = true;
    outcome.exception = "pydantic.ValidationError";
    outcome.message = detail != nullptr ? detail->ToString() : call.status().message();
    return outcome;
  }
  auto outputs = call.ok() ? Guarded(*call) : Result<Value>(call.status());
  if (outputs.ok()) {
    outcome.outputs = *std::move(outputs);
    return outcome;
  }
  const runtime::ExceptionDetail* exception = runtime::GetExceptionDetail(outputs.status());
  outcome.exception = exception != nullptr ? exception->python_type()
                                           : runtime::PythonExceptionFor("", outputs.status().code());
  outcome.message = outputs.status().message();
  return outcome;
}

RuntimeResponse Runtime::Impl::Failure(const std::string& endpoint, const EndpointFailure& failure) const {
  std::cerr << "tesscpp: " << endpoint << " failed: " << failure.type << ": " << failure.message << "\n";
  RuntimeResponse r;
  r.status = 500;
  r.content_type = "text/plain; charset=utf-8";
  if (!config.debug) {
    r.body = Buffer::FromString("Internal Server Error");
    return r;
  }
  if (!failure.traceback.empty()) {
    r.body = Buffer::FromString(failure.traceback);
    return r;
  }
  // Shaped like the Python traceback the reference shows in debug mode, so
  // people and tools that look for "Traceback" and the message find them.
  r.body = Buffer::FromString("Traceback (most recent call last):\n  endpoint \"" + endpoint +
                              "\" of component \"" + component->name() + "\"\n" + failure.type + ": " +
                              failure.message + "\n");
  return r;
}

std::optional<RuntimeResponse> Runtime::Impl::InvalidRunId(const std::string& run_id) {
  if (!run_id.empty() && run_id.find('/') == std::string::npos && run_id != "." && run_id != "..") {
    return std::nullopt;
  }
  // The reference joins run_id into a path unchecked; here it may not leave
  // the output directory.
  return JsonResponse(422, ValidationIssuesToJson({RunIdIssue(run_id)}, {}));
}

runtime::RunDirectoryPool* Runtime::Impl::RunPool() const {
  return run_pool.Get([this] {
    return OrWarned(runtime::RunDirectoryPool::Create(config.output_path, config.mlflow_tracking_uri.empty()),
                    "run directories are made during each call");
  });
}

Result<runtime::RunDirectoryPool::PreparedRun> Runtime::Impl::OpenRun(
    const std::optional<std::string>& given_run_id) const {
  if (!given_run_id && !config.one_shot) {
    if (runtime::RunDirectoryPool* pool = RunPool()) {
      if (auto run = pool->Take()) return *std::move(run);
    }
  }
  // A one-shot command's run is the output directory itself, as with
  // tesseract-runtime's CLI; a server's is run_<id> inside it.
  runtime::RunDirectoryPool::PreparedRun run;
  run.id = given_run_id.value_or(platform::NewUuid4());
  run.dir = config.one_shot ? config.output_path
                            : (std::filesystem::path(config.output_path) / ("run_" + run.id)).string();
  TESS_ASSIGN_OR_RETURN(run.log, runtime::CreateRunDirectory(run.dir, config.mlflow_tracking_uri.empty()));
  return run;
}

Runtime::Impl::RunOutcome Runtime::Impl::RunInRunDirectory(const std::string& endpoint,
                                                           const std::optional<std::string>& given_run_id,
                                                           const runtime::PreparedCall& call,
                                                           runtime::CallContext context) const {
  RunOutcome outcome;
  auto run = OpenRun(given_run_id);
  platform::PhaseTrace::Mark("run_dir");
  if (!run.ok()) {
    outcome.outputs = OsError(run.status());
    return outcome;
  }
  outcome.run_id = run->id;
  {
    auto capture = runtime::StdioCapture::Start(std::move(run->log));
    if (!capture.ok()) {
      outcome.outputs = OsError(capture.status());
      return outcome;
    }
    platform::PhaseTrace::Mark("capture");
    const auto start = std::chrono::steady_clock::now();
    context.run_dir = run->dir;
    context.run_loggers = &run_loggers;
    outcome.outputs = Guarded(call, context);
    platform::PhaseTrace::Mark("apply");
    if (config.profiling) {
      std::printf("\n--- Profiling Statistics ---\n%s: %.6f s (validation of outputs included)\n",
                  endpoint.c_str(), Seconds(start));
    }
  }
  platform::PhaseTrace::Mark("capture");  // restoring stdio
  return outcome;
}

std::optional<Value> Runtime::Impl::KeptApplyBody(EndpointId endpoint, bool keep,
                                                  const Value& request_body) const {
  // Where host copies are forbidden the apply could not be kept anyway (its key is one).
  if (residuals == nullptr || endpoint != EndpointId::kApply || !keep || !request_body.is_dict() ||
      core::ImplicitHostCopiesForbidden()) {
    return std::nullopt;
  }
  const Value* inputs = request_body.as_dict().find("inputs");
  if (inputs == nullptr || !core::HoldsDeviceTensors(*inputs)) return std::nullopt;
  Result<Value> owned = runtime::OwnDeviceCopy(*inputs);
  if (!owned.ok()) return std::nullopt;
  Value body = request_body;
  body.as_dict().set("inputs", *std::move(owned));
  return body;
}

Runtime::Impl::Reuse Runtime::Impl::BeginReuse(EndpointId endpoint, bool keep,
                                               std::optional<std::string_view> reference,
                                               const Value& request_body, bool lent,
                                               bool inputs_owned) const {
  Reuse reuse;
  if (residuals == nullptr || !request_body.is_dict()) return reuse;
  reuse.inputs = request_body.as_dict().find("inputs");
  if (reuse.inputs == nullptr) return reuse;
  // Device inputs are compared as their host copies and devices (docs/forward-reuse.md §3a).
  const bool on_device = core::HoldsDeviceTensors(*reuse.inputs);
  if (endpoint == EndpointId::kApply) {
    // Lent device inputs are kept only where the apply runs on its own copy.
    if (!keep || (on_device && !inputs_owned)) return reuse;
    // The inputs as they are now: shared with the request where nobody can
    // change them, else copied before the call runs.
    Result<Value> kept_at = on_device                              ? runtime::KeyOf(*reuse.inputs)
                            : lent || component->MayChangeInputs() ? runtime::DetachedCopy(*reuse.inputs)
                                                                   : Result<Value>(*reuse.inputs);
    reuse.keep = kept_at.ok();
    if (kept_at.ok()) reuse.kept_at = *std::move(kept_at);
    return reuse;
  }
  if (!reference) return reuse;
  Result<Value> compared = on_device ? runtime::KeyOf(*reuse.inputs) : Result<Value>(Value());
  if (!compared.ok()) return reuse;  // not comparable here: the call neither refers nor says so
  reuse.referred = true;
  runtime::ResidualStore::Found found = residuals->Find(*reference, on_device ? *compared : *reuse.inputs);
  reuse.found = std::move(found.residual);
  reuse.miss = found.miss;
  return reuse;
}

void Runtime::Impl::FinishReuse(Reuse& reuse, ForwardReuse& said) const {
  if (reuse.keep && reuse.kept.state != nullptr) {
    if (auto reference = residuals->Put(std::move(reuse.kept_at), std::move(reuse.kept))) {
      said.residuals = *std::move(reference);
    }
  }
  if (reuse.referred)
    said.used = reuse.found != nullptr ? std::string("hit") : "recomputed: " + std::string(reuse.miss);
}

RuntimeResponse Runtime::Impl::RunWrapped(EndpointId id, const std::string& endpoint,
                                          const RuntimeRequest& request, std::string_view query,
                                          const Value& request_body, const runtime::PreparedCall& call,
                                          std::unique_ptr<gpu_transport::ServerCall> gpu,
                                          bool inputs_owned) const {
  const std::optional<Encoding> encoding = runtime::NegotiateEncoding(request.accept, offer);
  if (!encoding) return JsonResponse(406, runtime::NotAcceptableBody(request.accept.value_or(""), offer));

  const std::optional<std::string> given_run_id = QueryParam(query, "run_id");
  if (given_run_id) {
    if (auto refused = InvalidRunId(*given_run_id)) return *std::move(refused);
  }

  Reuse reuse = BeginReuse(id, platform::FindHeader(request.headers, runtime::kKeepHeader) == "1",
                           platform::FindHeader(request.headers, runtime::kResidualsHeader), request_body,
                           false, inputs_owned);
  runtime::CallContext context;
  if (reuse.keep) context.keep = &reuse.kept;
  context.kept = reuse.found;
  auto [run_id, outputs] = RunInRunDirectory(endpoint, given_run_id, call, std::move(context));
  BinrefWriter binref(config.output_path, config.one_shot ? "" : "run_" + run_id);
  if (encoding->format == OutputFormat::kJsonBinref) binref.set_file_source(BinrefFiles());
  Result<Buffer> body = Status::Internal("not written");
  if (outputs.ok()) {
    JsonWriteOptions write;
    write.arrays.encoding = ArrayEncodingOf(encoding->format);
    // json arrays are never compressed (as the reference).
    write.arrays.compression =
        encoding->format != OutputFormat::kJson ? encoding->compression : Compression::kNone;
    write.arrays.binref = &binref;
    if (gpu && encoding->gpu_transport != gpu_transport::kNoTransport)
      write.arrays.device_arrays = gpu->outputs();
    body = WriteJson(*outputs, write);
    platform::PhaseTrace::Mark("encode");
  }
  RuntimeResponse r;
  if (gpu) {
    auto headers = gpu->Finish(request_body, body.ok() ? &*outputs : nullptr);
    platform::PhaseTrace::Mark("gpu_finish");
    if (!headers.ok()) return Failure(endpoint, {"RuntimeError", headers.status().message()});
    r.headers = *std::move(headers);
  }
  if (!outputs.ok()) return Failure(endpoint, FailureOf(outputs.status()));
  if (!body.ok()) return Failure(endpoint, {"SerializationError", body.status().message()});
  ForwardReuse said;
  FinishReuse(reuse, said);
  if (!said.residuals.empty()) r.headers.emplace_back(runtime::kResidualsHeader, std::move(said.residuals));
  if (!said.used.empty()) r.headers.emplace_back(runtime::kResidualsUsedHeader, std::move(said.used));
  r.content_type = "application/" + std::string(OutputFormatName(encoding->format));
  r.body = *std::move(body);
  return r;
}

BinrefWriter::FileSource Runtime::Impl::BinrefFiles() const {
  if (config.binref_output_pool_mb == 0) return nullptr;
  runtime::BinrefOutputPool* pool = binref_pool.Get([this] {
    return OrWarned(runtime::BinrefOutputPool::Create(config.output_path, config.binref_output_pool_mb << 20),
                    "answers are written without a binref pool");
  });
  if (pool == nullptr) return nullptr;
  return [pool](int64_t size) { return pool->Take(size); };
}

RuntimeResponse Runtime::Impl::CheckGpuTransport(const RuntimeRequest& request) const {
  auto body = IsJsonContentType(request.content_type) && request.body.size() > 0
                  ? ReadJson(request.body)
                  : Result<Value>(Status::DecodeError("not JSON"));
  if (!body.ok() || !body->is_dict()) {
    const Value input = body.ok() ? *body : Value(std::string(request.body.string_view()));
    return Unprocessable(std::vector<ValidationIssue>{
        {"dict_type", {}, "Input should be a valid dictionary", input, Value()}});
  }
  RuntimeResponse r;
  std::tie(r.body, r.headers) = transport->AnswerCheck(*body);
  return r;
}

Result<Value> Runtime::Impl::CallInProcess(std::string_view endpoint, const Value& payload,
                                           const std::optional<std::string>& given_run_id,
                                           ForwardReuse* reuse) const {
  const std::optional<EndpointId> id = core::FindEndpoint(endpoint);
  if (!id || !Serves(*id)) {
    return Status::Unimplemented("endpoint '", endpoint, "' is not implemented by this Tesseract (",
                                 component->name(), ")");
  }
  if (*id == EndpointId::kHealth) return Value::Dict{{"status", Value("ok")}};
  if (*id == EndpointId::kTest) {
    return runtime::RunTestSpec(payload, endpoints,
                                [this](const std::string& e, const Value& p) { return RunForTest(e, p); });
  }
  const std::string name(endpoint);
  const std::optional<Value> owned =
      reuse != nullptr ? KeptApplyBody(*id, reuse->keep, payload) : std::nullopt;
  TESS_ASSIGN_OR_RETURN(runtime::PreparedCall call,
                        Guarded([&] { return component->Prepare(*id, owned ? *owned : payload, {}); }));
  platform::PhaseTrace::Mark("validate");
  // Runs as the served endpoint runs, failures shaped like the SDK's
  // in-process client reports them.
  Result<Value> outputs = Status::Internal("not run");
  if (core::Endpoint(*id).kind == core::EndpointKind::kWrapped) {
    if (given_run_id && InvalidRunId(*given_run_id)) return ValidationFailure({RunIdIssue(*given_run_id)});
    ReleaseAfter release_after{residuals.get()};
    if (reuse != nullptr && residuals != nullptr) {
      for (const std::string& done : reuse->release) {
        if (residuals->Release(done, reuse->residuals)) release_after.reference = reuse->residuals;
      }
    }
    Reuse kept;
    if (reuse != nullptr) {
      kept = BeginReuse(
          *id, reuse->keep,
          reuse->residuals.empty() ? std::nullopt : std::optional<std::string_view>(reuse->residuals),
          payload, true, owned.has_value());
    }
    runtime::CallContext context;
    if (kept.keep) context.keep = &kept.kept;
    context.kept = kept.found;
    outputs = RunInRunDirectory(name, given_run_id, call, std::move(context)).outputs;
    if (outputs.ok() && reuse != nullptr) {
      ForwardReuse said;
      FinishReuse(kept, said);
      if (reuse->keep) reuse->residuals = std::move(said.residuals);
      reuse->used = std::move(said.used);
    }
  } else {
    outputs = Guarded(call);
  }
  if (outputs.ok()) return outputs;
  const EndpointFailure failure = FailureOf(outputs.status());
  return Status(outputs.status().code(),
                "Error running Tesseract API " + name + ": " + failure.type + ": " + failure.message);
}

Runtime::Impl::ReadBody Runtime::Impl::ReadRequestBody(const RuntimeRequest& request, bool text_kind,
                                                       DeviceArrayReader* device_arrays) const {
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  read.array_options.binref_dir = config.input_path;
  read.array_options.device_arrays = device_arrays;
  read.exact_numbers = text_kind;
  auto body = ReadJson(request.body, read);
  if (!body.ok() && GetValidationDetail(body.status()) != nullptr && text_kind) {
    read.arrays = ArrayDetection::kNone;  // the kind reports undecodable arrays itself
    body = ReadJson(request.body, read);
  }
  if (body.ok()) {
    if (body->is_null()) return {Value(), MissingBody()};  // FastAPI: a null body is no body
    return {*std::move(body), std::nullopt};
  }
  if (GetValidationDetail(body.status()) != nullptr) return {Value(), Unprocessable(body.status())};
  // Numbers beyond a Value, NaN, nesting past our limit, another encoding:
  // Python's json module may read what ours does not, and the kind's answer
  // is its own.
  if (text_kind) return {Value(), std::nullopt};
  const std::string_view text = request.body.string_view();
  // Starlette refuses a body that is not UTF-8 before parsing it (the
  // parser checked UTF-8 already; this only tells which answer to give).
  if (!runtime::IsValidUtf8(text)) return {Value(), Detail(400, "There was an error parsing the body")};
  // FastAPI reports Python's json position and message; where Python would
  // have parsed the body (NaN, deep nesting), ours names the problem at 0.
  const auto located = runtime::LocateJsonError(text);
  return {Value(),
          Unprocessable(std::vector<ValidationIssue>{
              {"json_invalid",
               {Value(located ? located->position : 0)},
               "JSON decode error",
               Value::Dict{},
               Value::Dict{{"error", Value(located ? located->message : body.status().message())}}}})};
}

RuntimeResponse Runtime::Impl::Post(const core::EndpointInfo& served, const RuntimeRequest& request,
                                    std::string_view query) const {
  const std::string endpoint(served.name);
  if (request.body.size() == 0) return MissingBody();
  const std::string_view text = request.body.string_view();
  if (!IsJsonContentType(request.content_type)) {
    // FastAPI hands a non-JSON body to the model as it is, and its error
    // quotes it; bytes that are not UTF-8 fail its rendering, a 500 that a
    // kind validating as FastAPI does gets too. Others quote them replaced.
    const bool utf8 = runtime::IsValidUtf8(text);
    if (!utf8 && component->ValidatesFromText()) {
      return Failure(endpoint, {"UnicodeDecodeError", "the request body is not UTF-8"});
    }
    return Unprocessable(
        std::vector<ValidationIssue>{{"model_attributes_type",
                                      {},
                                      "Input should be a valid dictionary or object to extract fields from",
                                      Value(utf8 ? std::string(text) : runtime::ReplaceInvalidUtf8(text)),
                                      Value()}});
  }
  // Device arrays are read as the transport says (in place, where the client
  // keeps them until the answer, which waits for the work on them); other
  // transports' are refused as tesseract-core refuses them.
  const std::unique_ptr<DeviceArrayReader> device_arrays = gpu_transport::ServerRequestArrays(
      gpu_transport_enabled() ? transport->RequestArrays() : nullptr, config.gpu_transport);
  // A kind that validates from the text gets the body as null where the
  // reader cannot read it exactly (its /test excepted: that is the runtime's).
  const bool text_kind = component->ValidatesFromText() && served.id != EndpointId::kTest;
  ReadBody body = ReadRequestBody(request, text_kind, device_arrays.get());
  platform::PhaseTrace::Mark("read");
  if (body.refusal) return *std::move(body.refusal);
  if (config.tracing) std::cerr << "tesscpp: " << endpoint << " called\n";

  if (served.id == EndpointId::kTest) {
    auto result = runtime::RunTestSpec(
        body.value, endpoints,
        [this](const std::string& e, const Value& payload) { return RunForTest(e, payload); });
    const Status settled = gpu_transport_enabled() ? transport->Settle(body.value) : Status::OK();
    if (!settled.ok()) return Failure(endpoint, {"RuntimeError", settled.message()});
    if (!result.ok()) return Unprocessable(result.status());
    return JsonResponse(200, *result);
  }
  // The transport's part begins before validation: cuda_ipc inputs are
  // ready once the client's event is reached, and a Python model validator
  // may read them.
  std::unique_ptr<gpu_transport::ServerCall> gpu;
  if (transport != nullptr && served.kind == core::EndpointKind::kWrapped) {
    auto begun = transport->Begin(request.headers);
    if (!begun.ok()) return Detail(core::HttpStatusFor(begun.status().code()), begun.status().message());
    gpu = *std::move(begun);
    platform::PhaseTrace::Mark("gpu_begin");
  }
  const std::optional<Value> owned = KeptApplyBody(
      served.id, platform::FindHeader(request.headers, runtime::kKeepHeader) == "1", body.value);
  auto call = Guarded([&] { return component->Prepare(served.id, owned ? *owned : body.value, text); });
  platform::PhaseTrace::Mark("validate");
  if (!call.ok()) {
    // A validation that threw failed as a call would: not the request's fault.
    if (runtime::GetExceptionDetail(call.status()) != nullptr)
      return Failure(endpoint, FailureOf(call.status()));
    // A kind that parses the text itself found it unparsable, as Starlette does.
    if (call.status().code() == StatusCode::kDecodeError) return Detail(400, call.status().message());
    return Unprocessable(call.status());
  }
  if (served.kind == core::EndpointKind::kWrapped) {
    return RunWrapped(served.id, endpoint, request, query, body.value, *call, std::move(gpu),
                      owned.has_value());
  }
  auto outputs = Guarded(*call);
  if (!outputs.ok()) return Failure(endpoint, FailureOf(outputs.status()));
  return JsonResponse(200, *outputs);
}

RuntimeResponse Runtime::Impl::Route(const RuntimeRequest& request) const {
  const std::string_view target = request.target;
  const size_t q = target.find('?');
  const std::string path(target.substr(0, q));
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);

  // A derivative call that names its own reference among those it releases
  // is done with it once it has run: freed as this returns.
  ReleaseAfter release_after{residuals.get()};
  if (residuals != nullptr) {
    if (auto done = platform::FindHeader(request.headers, runtime::kResidualsReleaseHeader)) {
      const std::string_view own =
          platform::FindHeader(request.headers, runtime::kResidualsHeader).value_or(std::string_view());
      if (residuals->Release(*done, own)) release_after.reference = std::string(own);
    }
  }
  if (gpu_transport_enabled()) {
    // tesseract-core's middleware: any request may acknowledge exports.
    transport->OnRequest(request.headers);
    if (path == "/check_gpu_transport") {
      if (request.method == "POST") return CheckGpuTransport(request);
      RuntimeResponse r = Detail(405, "Method Not Allowed");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
  }
  // Starlette adds HEAD to its own GET routes (the documents), not to /health.
  const bool is_document = path == "/openapi.json" || path == "/docs";
  const core::EndpointInfo* endpoint = nullptr;  // the served endpoint the path names
  if (path.size() > 1 && !is_document) {
    const std::optional<EndpointId> id = core::FindEndpoint(std::string_view(path).substr(1));
    if (id && Serves(*id)) endpoint = &core::Endpoint(*id);
  }
  if (!is_document && endpoint == nullptr) return Detail(404, "Not Found");
  const std::string_view allowed = is_document ? "GET, HEAD" : endpoint->method;
  const bool method_ok =
      is_document ? request.method == "GET" || request.method == "HEAD" : request.method == allowed;
  if (!method_ok) {
    RuntimeResponse r = Detail(405, "Method Not Allowed");
    r.headers.emplace_back("Allow", std::string(allowed));
    return r;
  }
  if (endpoint != nullptr && endpoint->id == EndpointId::kHealth) {
    // Health probes are the most frequent request a server sees: no JSON writer.
    RuntimeResponse r;
    r.body = health_body;
    return r;
  }
  if (path == "/openapi.json") {
    RuntimeResponse r;
    r.body = openapi_body;
    return r;
  }
  if (path == "/docs") {
    RuntimeResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = docs_body;
    return r;
  }
  return Post(*endpoint, request, query);
}

Result<std::unique_ptr<Runtime>> Runtime::Make(std::shared_ptr<const ServedComponent> component,
                                               RuntimeConfig config,
                                               component::RunLoggerFactory mlflow_runs) {
  TESS_RETURN_IF_ERROR(config.Validate());
  TESS_RETURN_IF_ERROR(runtime::PrepareOutputDirectory(config.output_path));
  if (!component->Implements(EndpointId::kApply)) {
    return Status::InvalidArgument("component '", component->name(), "' has no apply endpoint");
  }
  if (!config.mlflow_tracking_uri.empty() && !mlflow_runs && !component->TracksRunsItself()) {
    return Status::InvalidArgument(
        "TESSERACT_MLFLOW_TRACKING_URI is set, but this runtime has no MLflow client");
  }
  auto impl = std::make_unique<Impl>();
  impl->run_loggers =
      config.mlflow_tracking_uri.empty() ? runtime::FileRunLogger::Factory() : std::move(mlflow_runs);
  // Validate() checked the names.
  impl->offer = {*OutputFormatFromName(config.output_format),
                 *CompressionFromName(config.compression),
                 {OutputFormat::kJson, OutputFormat::kJsonBase64, OutputFormat::kJsonBinref},
                 {std::string(gpu_transport::kNoTransport)},
                 {Compression::kNone, Compression::kLz4}};
  if (config.residual_host_mb > 0 || config.residual_device_mb > 0) {
    impl->residuals = std::make_unique<runtime::ResidualStore>(
        runtime::ResidualLimits{config.residual_host_mb << 20, config.residual_device_mb << 20,
                                std::chrono::seconds(config.residual_ttl_s)});
  }
  if (const gpu_transport::TransportEntry* served = gpu_transport::FindTransport(config.gpu_transport)) {
    impl->transport = served->make_server({config.cuda_ipc_pool_fraction});
    impl->offer.gpu_transports.push_back(served->name);
  }
  for (const core::EndpointInfo& e : core::Endpoints()) {
    // Health and test are the runtime's: the component is asked of its own only.
    const bool implements = e.kind != core::EndpointKind::kRuntime && component->Implements(e.id);
    const bool served = core::IsServed(e, implements, config.debug);
    impl->is_served[static_cast<int>(e.id)] = served;
    if (served) impl->endpoints.emplace_back(e.name);
  }

  runtime::DocumentSettings settings;
  settings.title = config.name;
  settings.version = config.version;
  settings.description = config.description;
  settings.debug = config.debug;
  settings.output_formats = impl->offer.FormatNames();
  settings.gpu_transports = impl->offer.gpu_transports;
  settings.compressions = impl->offer.CompressionNames();
  TESS_ASSIGN_OR_RETURN(runtime::ServedDocuments documents, component->Documents(settings));
  if (documents.openapi_json) {
    impl->openapi_body = Buffer::FromString(*std::move(documents.openapi_json));
  } else {
    TESS_ASSIGN_OR_RETURN(impl->openapi_body, WriteJson(documents.openapi));
  }
  impl->docs_body = Buffer::FromString(documents.docs_html ? *std::move(documents.docs_html)
                                                           : runtime::RenderDocsPage(documents.openapi));
  impl->component = std::move(component);
  impl->config = std::move(config);
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

RuntimeResponse Runtime::Handle(const RuntimeRequest& request) const {
  platform::PhaseTrace trace("server", std::string_view(request.target).substr(0, request.target.find('?')));
  // Whatever escapes the guarded component code (the runtime's own, e.g. an
  // allocation) is this request's 500, never the process's end.
  Result<RuntimeResponse> answered =
      Guarded([&]() -> Result<RuntimeResponse> { return impl_->Route(request); });
  if (answered.ok()) return *std::move(answered);
  return impl_->Failure(request.target, FailureOf(answered.status()));
}
runtime::ResidualStats Runtime::residual_stats() const {
  return impl_->residuals != nullptr ? impl_->residuals->Stats() : runtime::ResidualStats{};
}

const RuntimeConfig& Runtime::config() const { return impl_->config; }
Result<Value> Runtime::Call(std::string_view endpoint, const Value& payload,
                            const std::optional<std::string>& run_id, ForwardReuse* reuse) const {
  return Guarded([&] { return impl_->CallInProcess(endpoint, payload, run_id, reuse); });
}
Status Runtime::MakeOneShotLogs() const {
  return runtime::CreateRunDirectory(impl_->config.output_path, impl_->config.mlflow_tracking_uri.empty())
      .status();
}
const std::vector<std::string>& Runtime::endpoints() const { return impl_->endpoints; }
const Buffer& Runtime::openapi_document() const { return impl_->openapi_body; }

}  // namespace tesscpp
