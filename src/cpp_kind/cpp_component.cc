#include "cpp_kind/cpp_component.h"

#include <algorithm>
#include <array>
#include <utility>

#include "cpp_kind/endpoint_schemas.h"
#include "cpp_kind/gradient_request.h"
#include "cpp_kind/openapi.h"
#include "platform/phase_trace.h"
#include "schema/validate.h"
#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/internal/core/device_values.h"

namespace tesscpp::cpp_kind {

using core::EndpointId;

struct CppComponent::Models {
  std::shared_ptr<const ModelSchema> apply_request;  // ApplyInputSchema {inputs}
  std::shared_ptr<const ModelSchema> apply_outputs;  // Apply_OutputSchema
  std::shared_ptr<const ModelSchema> abstract_request;
  std::shared_ptr<const ModelSchema> abstract_outputs;
  // The derivative endpoints (the table's gradients); inputs null for those
  // the component lacks.
  // Where InputPath and OutputPath values resolve: requests validate with
  // `requests`, an endpoint's outputs with `outputs` (answered relative).
  schema::ValidateOptions requests;
  schema::ValidateOptions outputs;
  std::array<GradientModels, 4> gradients{GradientModels{EndpointId::kJacobian, nullptr, {}, {}},
                                          GradientModels{EndpointId::kJacobianVectorProduct, nullptr, {}, {}},
                                          GradientModels{EndpointId::kVectorJacobianProduct, nullptr, {}, {}},
                                          GradientModels{EndpointId::kHessianVectorProduct, nullptr, {}, {}}};

  const GradientModels* Gradient(EndpointId endpoint) const {
    for (const GradientModels& g : gradients) {
      if (g.endpoint == endpoint) return g.inputs != nullptr ? &g : nullptr;
    }
    return nullptr;
  }
};

namespace {

// Runs `call` inside the call's run (run_log.h) when it has one: the run is
// made first (an MLflow run, as tesseract-runtime starts one for every call),
// is where the endpoint's LogMetric and the others go, and is ended after,
// whatever the outcome.
// OutputDirectory() names `output_path` during every call, with a run or
// without one (/test, abstract_eval).
// The component's code reaches the call's forward-reuse state through
// tesscpp/forward_reuse.h, on this thread, for as long as it runs.
template <typename Fn>
Result<Value> InRun(const runtime::CallContext& context, const std::string& output_path, const Fn& call) {
  component::ScopedKeep keep(context.keep);
  component::ScopedKept kept(context.kept);
  if (context.run_loggers == nullptr || !*context.run_loggers) {
    component::ScopedRunLogger scope(nullptr, output_path);
    return call();
  }
  TESS_ASSIGN_OR_RETURN(std::unique_ptr<component::RunLogger> logger,
                        (*context.run_loggers)(context.run_dir));
  Result<Value> outputs = Status::Internal("not run");
  try {
    component::ScopedRunLogger scope(logger.get(), output_path);
    outputs = call();
  } catch (...) {
    (void)logger->End();  // the exception is the failure to report
    throw;
  }
  Status ended = logger->End();
  if (!ended.ok() && outputs.ok()) return ended;
  return outputs;
}

// The author's docstring of `endpoint`, or nullopt when `c` lacks it.
std::optional<std::string> DocOf(const Component& c, EndpointId endpoint) {
  auto doc = [](const auto& e) { return e ? std::optional<std::string>(e.doc) : std::nullopt; };
  switch (endpoint) {
    case EndpointId::kApply: return doc(c.apply());
    case EndpointId::kJacobian: return doc(c.jacobian());
    case EndpointId::kJacobianVectorProduct: return doc(c.jacobian_vector_product());
    case EndpointId::kVectorJacobianProduct: return doc(c.vector_jacobian_product());
    case EndpointId::kHessianVectorProduct: return doc(c.hessian_vector_product());
    case EndpointId::kAbstractEval: return doc(c.abstract_eval());
    case EndpointId::kHealth:
    case EndpointId::kTest: break;   // the runtime's
    case EndpointId::kCount: break;  // no endpoint
  }
  return std::nullopt;
}

std::string PrefixOf(EndpointId endpoint) { return std::string(core::Endpoint(endpoint).model_prefix); }

// apply, with host copies of device inputs for a component that takes none.
Result<Value> CallApply(const Component& c, const CppComponent::Models& m, const Value& inputs) {
  if (!c.accepts_device_arrays() && core::HoldsDeviceTensors(inputs)) {
    Value host_inputs = inputs;
    TESS_RETURN_IF_ERROR(core::MoveDeviceTensorsToHost(host_inputs));
    return CallApply(c, m, host_inputs);
  }
  Record record;
  TESS_RETURN_IF_ERROR(c.apply().fn(ModelView(inputs), record));
  platform::PhaseTrace::Mark("endpoint");
  auto outputs = schema::ValidateModel(*m.apply_outputs, std::move(record).Finish(), m.outputs);
  if (!outputs.ok())
    return Status::Internal("apply returned outputs that do not fit OutputSchema: ", outputs.status());
  return outputs;
}

Result<Value> CallAbstractEval(const Component& c, const CppComponent::Models& m, const Value& inputs) {
  Record record;
  TESS_RETURN_IF_ERROR(c.abstract_eval().fn(AbstractModelView(inputs), record));
  auto outputs = schema::ValidateModel(*m.abstract_outputs, std::move(record).Finish());
  if (!outputs.ok()) {
    return Status::Internal("abstract_eval returned outputs that do not fit OutputSchema: ",
                            outputs.status());
  }
  return outputs;
}

bool OnDevice(const TensorMap& vector) {
  return std::any_of(vector.begin(), vector.end(),
                     [](const auto& entry) { return !entry.second.device().host_accessible(); });
}

Result<Value> CallGradient(const Component& c, const GradientModels& models, const GradientRequest& request) {
  if (!c.accepts_device_arrays() && (OnDevice(request.tangent) || OnDevice(request.cotangent) ||
                                     core::HoldsDeviceTensors(request.inputs))) {
    GradientRequest host_request = request;
    TESS_RETURN_IF_ERROR(core::MoveDeviceTensorsToHost(host_request.inputs));
    for (TensorMap* vector : {&host_request.tangent, &host_request.cotangent}) {
      for (auto& entry : *vector) {
        TESS_ASSIGN_OR_RETURN(entry.second, core::ImplicitCopyToHost(entry.second));
      }
    }
    return CallGradient(c, models, host_request);
  }
  const ModelView inputs(request.inputs);
  const PathSet& in = request.input_set;
  const PathSet& out = request.output_set;
  TensorMap result;
  // Every endpoint named, none by default: a new derivative endpoint that is
  // not routed here fails to compile (-Wswitch), never reaches another's code.
  switch (models.endpoint) {
    case EndpointId::kJacobian: {
      JacobianMap jacobian;
      TESS_RETURN_IF_ERROR(c.jacobian().fn(inputs, in, out, jacobian));
      return ValidateJacobianResult(models, request, jacobian);
    }
    case EndpointId::kJacobianVectorProduct:
      TESS_RETURN_IF_ERROR(c.jacobian_vector_product().fn(inputs, in, out, request.tangent, result));
      break;
    case EndpointId::kVectorJacobianProduct:
      TESS_RETURN_IF_ERROR(c.vector_jacobian_product().fn(inputs, in, out, request.cotangent, result));
      break;
    case EndpointId::kHessianVectorProduct:
      TESS_RETURN_IF_ERROR(
          c.hessian_vector_product().fn(inputs, in, out, request.tangent, request.cotangent, result));
      break;
    case EndpointId::kApply:
    case EndpointId::kHealth:
    case EndpointId::kAbstractEval:
    case EndpointId::kTest:
    case EndpointId::kCount:
      return Status::Internal(core::Endpoint(models.endpoint).name, " is not a derivative");
  }
  platform::PhaseTrace::Mark("endpoint");
  return ValidateProductResult(models, request, result);
}

}  // namespace

std::map<EndpointId, std::string> EndpointDocs(const Component& component) {
  std::map<EndpointId, std::string> docs;
  for (const core::EndpointInfo& e : core::Endpoints()) {
    if (std::optional<std::string> doc = DocOf(component, e.id)) docs.emplace(e.id, *std::move(doc));
  }
  return docs;
}

CppComponent::CppComponent(std::shared_ptr<const Component> component, std::shared_ptr<const Models> models)
    : component_(std::move(component)), models_(std::move(models)) {}

Result<std::shared_ptr<const CppComponent>> CppComponent::Make(std::shared_ptr<const Component> component,
                                                               std::string input_path,
                                                               std::string output_path) {
  const Component& c = *component;
  const auto inputs = c.input_schema();
  const auto outputs = c.output_schema();
  auto m = std::make_shared<Models>();
  m->requests.input_path = input_path;
  m->requests.output_path = output_path;
  m->outputs = m->requests;
  m->outputs.relative_output_paths = true;
  TESS_ASSIGN_OR_RETURN(
      m->apply_request,
      ModelSchema::Make(
          "ApplyInputSchema",
          {Field("inputs", SchemaType::Model(DeriveModel(*inputs, PrefixOf(EndpointId::kApply), false)),
                 "The input data to apply the Tesseract to.")}));
  m->apply_outputs = DeriveModel(*outputs, PrefixOf(EndpointId::kApply), false);
  const auto input_paths = DifferentiablePaths(*inputs);
  const auto output_paths = DifferentiablePaths(*outputs);
  for (GradientModels& g : m->gradients) {
    if (!DocOf(c, g.endpoint)) continue;  // the component does not have it
    g.inputs = DeriveModel(*inputs, PrefixOf(g.endpoint), false);
    g.input_paths = input_paths;
    g.output_paths = output_paths;
  }
  if (c.abstract_eval()) {
    const std::string prefix = PrefixOf(EndpointId::kAbstractEval);
    TESS_ASSIGN_OR_RETURN(
        m->abstract_request,
        ModelSchema::Make("AbstractInputSchema",
                          {Field("inputs", SchemaType::Model(DeriveModel(*inputs, prefix, true)),
                                 "The abstract input data to evaluate the Tesseract on.")}));
    m->abstract_outputs = DeriveModel(*outputs, prefix, true);
  }
  return std::make_shared<const CppComponent>(std::move(component), std::move(m));
}

bool CppComponent::Implements(EndpointId endpoint) const { return DocOf(*component_, endpoint).has_value(); }

Result<runtime::ServedDocuments> CppComponent::Documents(const runtime::DocumentSettings& settings) const {
  OpenApiInput doc;
  doc.title = settings.title.value_or(component_->name());
  doc.version = settings.version.value_or(component_->version());
  doc.description = settings.description.value_or(component_->description());
  doc.inputs = component_->input_schema();
  doc.outputs = component_->output_schema();
  doc.endpoint_docs = EndpointDocs(*component_);
  doc.debug = settings.debug;
  doc.output_formats = settings.output_formats;
  doc.gpu_transports = settings.gpu_transports;
  doc.compressions = settings.compressions;
  // The runtime writes the document and renders /docs from it.
  return runtime::ServedDocuments{BuildOpenApiDocument(doc), std::nullopt, std::nullopt};
}

Result<runtime::PreparedCall> CppComponent::Prepare(EndpointId endpoint, const Value& body,
                                                    std::string_view /*text*/) const {
  // Each call shares the component and the models (`gradient` points into
  // them), so it stays valid whatever becomes of this object.
  if (const GradientModels* gradient = models_->Gradient(endpoint)) {
    TESS_ASSIGN_OR_RETURN(GradientRequest validated,
                          ValidateGradientRequest(*gradient, body, models_->requests));
    return runtime::PreparedCall([c = component_, m = models_, gradient,
                                  validated = std::move(validated)](const runtime::CallContext& context) {
      return InRun(context, m->requests.output_path, [&] { return CallGradient(*c, *gradient, validated); });
    });
  }
  const bool apply = endpoint == EndpointId::kApply;
  if (!apply && (endpoint != EndpointId::kAbstractEval || models_->abstract_request == nullptr)) {
    // The runtime asks only for what Implements() said yes to.
    return Status::Unimplemented("endpoint '", core::Endpoint(endpoint).name, "' is not implemented by ",
                                 component_->name());
  }
  TESS_ASSIGN_OR_RETURN(Value validated,
                        schema::ValidateModel(apply ? *models_->apply_request : *models_->abstract_request,
                                              body, models_->requests));
  return runtime::PreparedCall([c = component_, m = models_, apply,
                                validated = std::move(validated)](const runtime::CallContext& context) {
    const Value& inputs = validated.as_dict().at("inputs");
    return InRun(context, m->requests.output_path,
                 [&] { return apply ? CallApply(*c, *m, inputs) : CallAbstractEval(*c, *m, inputs); });
  });
}

}  // namespace tesscpp::cpp_kind
