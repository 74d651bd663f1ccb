// tesseract.cc: the Tesseract handle — request bodies per endpoint, the
// "not implemented by this Tesseract" checks, views with other encodings.
#include <algorithm>
#include <memory>

#include "client/served_server.h"
#include "client/session.h"
#include "gpu_transport/registry.h"
#include "tesscpp/internal/core/endpoint_table.h"

namespace tesscpp {
namespace {

using core::EndpointId;

std::string_view Named(EndpointId id) { return core::Endpoint(id).name; }

Value PathList(const std::vector<std::string>& paths) {
  Value::List list;
  list.reserve(paths.size());
  for (const std::string& p : paths) list.emplace_back(p);
  return list;
}

}  // namespace

Tesseract::Tesseract(std::shared_ptr<TesseractSession> session, RequestedEncoding encoding)
    : session_(std::move(session)), encoding_(std::move(encoding)) {}

Result<Tesseract> Tesseract::FromUrl(std::string_view url, ClientOptions options) {
  RequestedEncoding encoding = options.encoding;
  TESS_ASSIGN_OR_RETURN(auto session, client::MakeHttpSession(std::string(url), std::move(options), nullptr));
  return Tesseract(std::move(session), std::move(encoding));
}

Result<Tesseract> Tesseract::FromSource(const std::string& path, const SourceOptions& options) {
  TESS_ASSIGN_OR_RETURN(auto session, client::MakeServedSession(path, options));
  return Tesseract(std::move(session), RequestedEncoding{options.output_format,
                                                         client::RequestedTransport(options), std::nullopt});
}

Result<Tesseract> Tesseract::FromImage(const std::string& image, const ImageOptions& options) {
  TESS_ASSIGN_OR_RETURN(auto session, client::MakeImageSession(image, options));
  return Tesseract(std::move(session), RequestedEncoding{options.output_format,
                                                         client::RequestedTransport(options), std::nullopt});
}

Result<Tesseract> Tesseract::FromLibrary(const std::string& path, const LibraryOptions& options) {
  TESS_ASSIGN_OR_RETURN(auto session, client::MakeLibrarySession(path, options));
  return Tesseract(std::move(session), RequestedEncoding{std::nullopt, options.gpu_transport, std::nullopt});
}

Result<Value> Tesseract::Send(std::string_view endpoint, const Value* payload,
                              const std::optional<std::string>& run_id, ForwardReuse* reuse) const {
  return session_->Run(endpoint, payload, run_id, encoding_, reuse);
}

Result<Value> Tesseract::Call(std::string_view endpoint, const Value& body,
                              const std::optional<std::string>& run_id, ForwardReuse* reuse) const {
  const std::optional<EndpointId> id = core::FindEndpoint(endpoint);
  if (!id || core::Endpoint(*id).kind == core::EndpointKind::kRuntime) {
    return Status::InvalidArgument("'", endpoint, "' is not a component endpoint");
  }
  if (*id != EndpointId::kApply) TESS_RETURN_IF_ERROR(RequireEndpoint(endpoint));
  return Send(endpoint, &body, run_id, reuse);
}

Status Tesseract::RequireEndpoint(std::string_view endpoint) const {
  TESS_ASSIGN_OR_RETURN(std::vector<std::string> endpoints, AvailableEndpoints());
  if (std::find(endpoints.begin(), endpoints.end(), endpoint) != endpoints.end()) return Status::OK();
  // The message is tesseract-core's, word for word: code matches on it.
  return Status::Unimplemented(core::Endpoint(*core::FindEndpoint(endpoint)).title,
                               " not implemented for this Tesseract.")
      .WithDetail(std::make_shared<ServedEndpointsDetail>(std::move(endpoints)));
}

std::string ServedEndpointsDetail::ToString() const {
  std::string list;
  for (const std::string& e : endpoints_) list += (list.empty() ? "" : ", ") + e;
  return "This Tesseract serves: " + list;
}

const ServedEndpointsDetail* GetServedEndpointsDetail(const Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != ServedEndpointsDetail::kTypeId) return nullptr;
  return static_cast<const ServedEndpointsDetail*>(detail.get());
}

Result<Value> Tesseract::Apply(const Value& inputs, const std::optional<std::string>& run_id) const {
  const Value payload = Value::Dict{{"inputs", inputs}};
  return Send(Named(EndpointId::kApply), &payload, run_id);
}

Result<Value> Tesseract::AbstractEval(const Value& abstract_inputs) const {
  TESS_RETURN_IF_ERROR(RequireEndpoint(Named(EndpointId::kAbstractEval)));
  const Value payload = Value::Dict{{"inputs", abstract_inputs}};
  return Send(Named(EndpointId::kAbstractEval), &payload, std::nullopt);
}

Result<Value> Tesseract::Health() const { return Send(Named(EndpointId::kHealth), nullptr, std::nullopt); }

Result<Value> Tesseract::CallGradient(std::string_view endpoint, const Value& inputs,
                                      const std::vector<std::string>& in, const std::vector<std::string>& out,
                                      const Value* tangent, const Value* cotangent,
                                      const std::optional<std::string>& run_id) const {
  TESS_RETURN_IF_ERROR(RequireEndpoint(endpoint));
  const core::EndpointInfo& e = core::Endpoint(*core::FindEndpoint(endpoint));
  const std::string prefix(e.short_name);
  Value::Dict payload{
      {"inputs", inputs}, {prefix + "_inputs", PathList(in)}, {prefix + "_outputs", PathList(out)}};
  if (tangent != nullptr) payload.set(std::string(e.tangent_field), *tangent);
  if (cotangent != nullptr) payload.set(std::string(e.cotangent_field), *cotangent);
  const Value body(std::move(payload));
  return Send(endpoint, &body, run_id);
}

Result<Value> Tesseract::Jacobian(const Value& inputs, const std::vector<std::string>& jac_inputs,
                                  const std::vector<std::string>& jac_outputs,
                                  const std::optional<std::string>& run_id) const {
  return CallGradient(Named(EndpointId::kJacobian), inputs, jac_inputs, jac_outputs, nullptr, nullptr,
                      run_id);
}

Result<Value> Tesseract::JacobianVectorProduct(const Value& inputs,
                                               const std::vector<std::string>& jvp_inputs,
                                               const std::vector<std::string>& jvp_outputs,
                                               const Value& tangent_vector,
                                               const std::optional<std::string>& run_id) const {
  return CallGradient(Named(EndpointId::kJacobianVectorProduct), inputs, jvp_inputs, jvp_outputs,
                      &tangent_vector, nullptr, run_id);
}

Result<Value> Tesseract::VectorJacobianProduct(const Value& inputs,
                                               const std::vector<std::string>& vjp_inputs,
                                               const std::vector<std::string>& vjp_outputs,
                                               const Value& cotangent_vector,
                                               const std::optional<std::string>& run_id) const {
  return CallGradient(Named(EndpointId::kVectorJacobianProduct), inputs, vjp_inputs, vjp_outputs, nullptr,
                      &cotangent_vector, run_id);
}

Result<Value> Tesseract::HessianVectorProduct(const Value& inputs, const std::vector<std::string>& hvp_inputs,
                                              const std::vector<std::string>& hvp_outputs,
                                              const Value& tangent_vector, const Value& cotangent_vector,
                                              const std::optional<std::string>& run_id) const {
  return CallGradient(Named(EndpointId::kHessianVectorProduct), inputs, hvp_inputs, hvp_outputs,
                      &tangent_vector, &cotangent_vector, run_id);
}

Result<TestOutcome> Tesseract::Test(const Value& test_spec) const {
  Status available = RequireEndpoint(Named(EndpointId::kTest));
  if (!available.ok()) {
    return Status::Unimplemented(available.message(), " It is served only in debug mode.")
        .WithDetail(available.detail());
  }
  TESS_ASSIGN_OR_RETURN(Value result, Send(Named(EndpointId::kTest), &test_spec, std::nullopt));
  const Value* status = result.is_dict() ? result.as_dict().find("status") : nullptr;
  if (status == nullptr || !status->is_string()) {
    return Status::DecodeError("the answer of test has no 'status' string");
  }
  const Value* message = result.as_dict().find("message");
  return TestOutcome{status->as_string(),
                     message != nullptr && message->is_string() ? message->as_string() : ""};
}

Result<Value> Tesseract::OpenApiSchema() const {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<const Value> document, session_->OpenApi());
  return *document;
}

Result<std::vector<std::string>> Tesseract::AvailableEndpoints() const {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<const Value> document, session_->OpenApi());
  const Value* paths = document->is_dict() ? document->as_dict().find("paths") : nullptr;
  if (paths == nullptr || !paths->is_dict())
    return Status::DecodeError("the OpenAPI document has no 'paths' object");
  std::vector<std::string> endpoints;
  for (const auto& [path, _] : paths->as_dict())
    endpoints.push_back(path.substr(path.find_first_not_of('/')));
  return endpoints;
}

Result<std::optional<ServerCapabilities>> Tesseract::Capabilities() const { return session_->Capabilities(); }

Result<Tesseract> Tesseract::WithEncoding(const RequestedEncoding& encoding) const {
  // Calls check again with the merged encoding; failing here names the argument.
  TESS_RETURN_IF_ERROR(session_->CheckRequestedEncoding(encoding));
  return Tesseract(session_, encoding_.Merge(encoding));
}

Result<GpuTransportCheck> Tesseract::CheckGpuTransport(const std::string& transport) const {
  if (transport == "none" || session_->InProcessTransport()) return GpuTransportCheck{true, ""};
  TESS_RETURN_IF_ERROR(session_->CheckRequestedEncoding({std::nullopt, transport, std::nullopt}));
  return session_->CheckGpuTransport(transport);
}

Result<GpuTransportChoice> Tesseract::ResolveGpuTransport() const {
  if (auto configured = session_->InProcessTransport()) {
    return GpuTransportChoice{encoding_.gpu_transport.value_or(*configured), std::nullopt};
  }
  if (encoding_.gpu_transport) {
    const std::string& requested = *encoding_.gpu_transport;
    TESS_ASSIGN_OR_RETURN(GpuTransportCheck check, CheckGpuTransport(requested));
    if (!check.works) {
      return Status::NotAcceptable(
          "gpu_transport='", requested,
          "' was requested, but it does not work between this process and the Tesseract: ", check.reason,
          ". Request gpu_transport='none' to copy GPU arrays to the host.");
    }
    return GpuTransportChoice{requested, std::nullopt};
  }
  TESS_ASSIGN_OR_RETURN(std::optional<ServerCapabilities> capabilities, session_->Capabilities());
  const auto& offered = capabilities ? capabilities->gpu_transports : std::nullopt;
  for (const gpu_transport::TransportEntry* entry : gpu_transport::Transports()) {
    // The SDK's _AUTO_GPU_TRANSPORTS: the first offered is checked, and used if it works.
    const std::string& name = entry->name;
    if (!entry->automatic || !offered ||
        std::find(offered->begin(), offered->end(), name) == offered->end()) {
      continue;
    }
    TESS_ASSIGN_OR_RETURN(GpuTransportCheck check, session_->CheckGpuTransport(name));
    if (check.works) return GpuTransportChoice{name, std::nullopt};
    return GpuTransportChoice{"none", check.reason, name};
  }
  return GpuTransportChoice{"none", std::nullopt};
}

Status Tesseract::Teardown() { return session_->Teardown(); }
Result<std::string> Tesseract::ServerLogs() const { return session_->ServerLogs(); }
Result<ContainerInfo> Tesseract::GetContainerInfo() const { return session_->GetContainerInfo(); }
std::string Tesseract::url() const { return session_->url(); }

}  // namespace tesscpp
