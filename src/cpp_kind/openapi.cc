// The /openapi.json document. tesseract-core 1.15 gets it from FastAPI, which
// asks pydantic for the JSON schema of every request and response model and
// then re-validates the whole document through its own OpenAPI models. Clients
// diff these documents, so this file reproduces both steps rather than just the
// content: model_json_schema.h builds schemas as pydantic builds them,
// fastapi_schema.h gives them the reference's key order, and this file adds
// the runtime's request/response models and the paths.
#include "cpp_kind/openapi.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cpp_kind/endpoint_schemas.h"
#include "cpp_kind/fastapi_schema.h"
#include "cpp_kind/model_json_schema.h"
#include "runtime/py_text.h"
#include "tesscpp/internal/core/endpoint_table.h"

namespace tesscpp::cpp_kind {
namespace {

using Dict = Value::Dict;
using List = Value::List;

// The literal paths and path patterns a gradient endpoint accepts: a Literal
// or an anchored pattern per differentiable array, a Union of them when several.
Value PathsJson(const std::vector<DifferentiablePath>& paths) {
  List options;
  for (const DifferentiablePath& p : paths) {
    if (p.wildcard) {
      options.push_back(Dict{{"type", "string"}, {"pattern", "^" + p.regex + "$"}});
    } else {
      options.push_back(StringLiteral(List{p.spelling}));
    }
  }
  if (options.size() == 1) return options[0];
  return Dict{{"anyOf", std::move(options)}};
}

// A set[...] of paths: a JSON array of unique items, at least one.
Value PathSetJson(const std::vector<DifferentiablePath>& paths, std::string_view name,
                  std::string_view description) {
  return Dict{
      {"type", "array"}, {"items", PathsJson(paths)},       {"uniqueItems", true},
      {"minItems", 1},   {"title", runtime::PyTitle(name)}, {"description", description},
  };
}

// A model with the given fields (all required), as pydantic renders the
// runtime's request models (extra keys forbidden).
Value RequestModel(std::string_view title, Dict properties) {
  List required;
  for (const auto& [name, unused] : properties) required.push_back(name);
  return Dict{{"properties", std::move(properties)},
              {"required", std::move(required)},
              {"type", "object"},
              {"additionalProperties", false},
              {"title", title}};
}

Value WithKeys(Value schema, std::initializer_list<std::pair<std::string_view, Value>> keys) {
  for (const auto& [key, v] : keys) schema.as_dict().set(std::string(key), v);
  return schema;
}

// differentiable_arrays: path pattern -> {shape (null for any rank), dtype (null for any)}.
Value DifferentiableArraysJson(const ModelSchema& model) {
  Dict out;
  for (const DifferentiablePath& p : DifferentiablePaths(model)) {
    Value shape;
    if (!p.type.shape().any_rank()) {
      List dims;
      for (const auto& d : p.type.shape().dims()) dims.push_back(d ? Value(*d) : Value());
      shape = std::move(dims);
    }
    out.set(p.spelling, Dict{{"shape", std::move(shape)},
                             {"dtype", p.type.dtype() ? Value(DtypeName(*p.type.dtype())) : Value()}});
  }
  return out;
}

Value FieldOrderJson(const ModelSchema& model) {
  Dict out;
  for (const auto& [path, names] : FieldOrder(model)) {
    List list;
    for (const std::string& n : names) list.push_back(n);
    out.set(path, std::move(list));
  }
  return out;
}

// The descriptions of a product's vectors and result: tesseract-core's for
// JVP and VJP, word for word; tesscpp's for the HVP, in their style.
struct ProductTexts {
  std::string_view tangent;
  std::string_view cotangent;
  std::string_view result;
};

ProductTexts TextsOf(core::EndpointId id) {
  switch (id) {
    case core::EndpointId::kJacobianVectorProduct:
      return {
          "Tangent vector to multiply the Jacobian with. Expected to be a mapping with structure "
          "``{jvp_inputs: array}``. The shape of each array is the same as the shape of the "
          "corresponding input array.",
          "",
          "Container for the results of Jacobian-vector products. The result is a mapping with "
          "structure ``{jvp_outputs: array}``. The shape of each array is the same as the shape of "
          "the corresponding output array."};
    case core::EndpointId::kVectorJacobianProduct:
      return {"",
              "Cotangent vector to multiply the Jacobian with. Expected to be a mapping with "
              "structure ``{vjp_outputs: array}``. The shape of each array is the same as the shape "
              "of the corresponding output array.",
              "Container for the results of vector-Jacobian products. The result is a mapping with "
              "structure ``{vjp_inputs: array}``. The shape of each array is the same as the shape of "
              "the corresponding input array."};
    case core::EndpointId::kHessianVectorProduct:
      return {
          "Tangent vector along which the vector-Jacobian product is differentiated. Expected to be a "
          "mapping with structure ``{hvp_inputs: array}``. The shape of each array is the same as the "
          "shape of the corresponding input array.",
          "Cotangent vector of the vector-Jacobian product that is differentiated. Expected to be a "
          "mapping with structure ``{hvp_outputs: array}``. The shape of each array is the same as the "
          "shape of the corresponding output array.",
          "Container for the results of Hessian-vector products. The result is a mapping with "
          "structure ``{hvp_inputs: array}``. The shape of each array is the same as the shape of "
          "the corresponding input array."};
    case core::EndpointId::kApply:
    case core::EndpointId::kJacobian:
    case core::EndpointId::kHealth:
    case core::EndpointId::kAbstractEval:
    case core::EndpointId::kTest:
    case core::EndpointId::kCount: break;  // not products
  }
  return {};
}

// The component schemas of create_gradient_schema for one gradient endpoint.
void AddGradientSchemas(const core::EndpointInfo& g, const OpenApiInput& input, JsonSchemaBuilder& b) {
  const auto in_paths = DifferentiablePaths(*input.inputs);
  const auto out_paths = DifferentiablePaths(*input.outputs);
  const Value any_array = b.TypeJson(SchemaType::Array(ShapeSpec::AnyRank(), std::nullopt));
  const std::string in_name = std::string(g.short_name) + "_inputs";
  const std::string out_name = std::string(g.short_name) + "_outputs";
  const std::string noun(g.noun);
  Dict properties{
      {"inputs", WithKeys(b.ModelRef(*DeriveModel(*input.inputs, std::string(g.model_prefix), false)),
                          {{"description", "The input data to compute the " + noun + " at."}})},
      {in_name, PathSetJson(in_paths, in_name,
                            "The set of differentiable inputs to compute the " + noun + " with respect to.")},
      {out_name,
       PathSetJson(out_paths, out_name, "The set of differentiable outputs to compute the " + noun + " of.")},
  };
  Value response;
  if (g.id == core::EndpointId::kJacobian) {
    response =
        WithKeys(DictJson(PathsJson(out_paths), DictJson(PathsJson(in_paths), any_array)),
                 {{"description",
                   "Container for the results of Jacobian computations. The result represents a nested "
                   "structure of the Jacobian matrix as a mapping with structure ``{jac_outputs: "
                   "{jac_inputs: array}}``. The shape of each array is the concatenation of the shapes of "
                   "the output and input arrays, i.e. ``(*output_array.shape, *input_array.shape)``."}});
  } else {
    const ProductTexts texts = TextsOf(g.id);
    if (!g.tangent_field.empty()) {
      properties.set(std::string(g.tangent_field),
                     WithKeys(DictJson(PathsJson(in_paths), any_array),
                              {{"title", "Tangent Vector"}, {"description", std::string(texts.tangent)}}));
    }
    if (!g.cotangent_field.empty()) {
      properties.set(
          std::string(g.cotangent_field),
          WithKeys(DictJson(PathsJson(out_paths), any_array),
                   {{"title", "Cotangent Vector"}, {"description", std::string(texts.cotangent)}}));
    }
    response = WithKeys(DictJson(PathsJson(g.answers_inputs() ? in_paths : out_paths), any_array),
                        {{"description", std::string(texts.result)}});
  }
  b.definitions[std::string(g.request_model)] = RequestModel(g.request_model, std::move(properties));
  response.as_dict().set("title", g.response_model);
  b.definitions[std::string(g.response_model)] = std::move(response);
}

// ApplyInputSchema and ApplyOutputSchema, with the differentiable arrays and
// field order tesseract-core adds to them.
void AddApplySchemas(const OpenApiInput& input, JsonSchemaBuilder& b) {
  const std::string prefix(core::Endpoint(core::EndpointId::kApply).model_prefix);
  const Value apply_inputs = b.ModelRef(*DeriveModel(*input.inputs, prefix, false));
  const Value apply_outputs = b.ModelRef(*DeriveModel(*input.outputs, prefix, false));
  b.definitions["ApplyInputSchema"] = WithKeys(
      RequestModel("ApplyInputSchema",
                   Dict{{"inputs", WithKeys(apply_inputs, {{"description",
                                                            "The input data to apply the Tesseract to."}})}}),
      {{"differentiable_arrays", DifferentiableArraysJson(*input.inputs)},
       {"field_order", FieldOrderJson(*input.inputs)}});
  b.definitions["ApplyOutputSchema"] =
      WithKeys(apply_outputs, {{"title", "ApplyOutputSchema"},
                               {"description", "The output data from applying the Tesseract."},
                               {"differentiable_arrays", DifferentiableArraysJson(*input.outputs)},
                               {"field_order", FieldOrderJson(*input.outputs)}});
}

void AddAbstractEvalSchemas(const OpenApiInput& input, JsonSchemaBuilder& b) {
  const std::string prefix(core::Endpoint(core::EndpointId::kAbstractEval).model_prefix);
  const Value abstract_inputs = b.ModelRef(*DeriveModel(*input.inputs, prefix, true));
  const Value abstract_outputs = b.ModelRef(*DeriveModel(*input.outputs, prefix, true));
  b.definitions["AbstractInputSchema"] = RequestModel(
      "AbstractInputSchema",
      Dict{{"inputs",
            WithKeys(abstract_inputs,
                     {{"description",
                       "The abstract input data to evaluate the Tesseract on. Has the same structure as "
                       "InputSchema, but with array fields replaced by ShapeDType."}})}});
  b.definitions["AbstractOutputSchema"] =
      WithKeys(abstract_outputs, {{"title", "AbstractOutputSchema"},
                                  {"description",
                                   "Abstract outputs with the same structure as OutputSchema, but with array "
                                   "fields replaced by ShapeDType."}});
}

// ---------------------------------------------------------------------------
// Paths.

Value JsonContent(Value schema) { return Dict{{"application/json", Dict{{"schema", std::move(schema)}}}}; }

// A route's operation. The wrapped endpoints' operations, which have the
// accept header parameter, stay as FastAPI assembled them (requestBody:
// required, content); the others come out of FastAPI's Operation model
// (requestBody: content, required). `request` is empty for a GET.
Value Operation(std::string_view name, std::string_view method, std::string_view docstring,
                std::string_view request, Value response_schema, bool accept_header) {
  Dict op{{"summary", runtime::PyTitle(name)}};
  if (std::string description = RouteDescription(docstring); !description.empty()) {
    op.set("description", std::move(description));
  }
  op.set("operationId", std::string(name) + "_" + std::string(name) + "_" + std::string(method));
  if (accept_header) {
    const Value optional_string =
        Dict{{"anyOf", List{Dict{{"type", "string"}}, Dict{{"type", "null"}}}}, {"title", "Accept"}};
    op.set(
        "parameters",
        List{Dict{{"name", "accept"}, {"in", "header"}, {"required", false}, {"schema", optional_string}}});
  }
  Dict responses{{"200", Dict{{"description", "Successful Response"},
                              {"content", JsonContent(std::move(response_schema))}}}};
  if (!request.empty()) {
    const Value content = JsonContent(SchemaRef(request));
    op.set("requestBody", accept_header ? Dict{{"required", true}, {"content", content}}
                                        : Dict{{"content", content}, {"required", true}});
    responses.set("422", Dict{{"description", "Validation Error"},
                              {"content", JsonContent(SchemaRef("HTTPValidationError"))}});
  }
  op.set("responses", std::move(responses));
  return Dict{{std::string(method), std::move(op)}};
}

// The runtime's docstring of the endpoint, then the author's after a blank line.
std::string EndpointDocstring(const core::EndpointInfo& endpoint, const OpenApiInput& input) {
  std::string doc(endpoint.doc);
  if (auto it = input.endpoint_docs.find(endpoint.id);
      it != input.endpoint_docs.end() && !it->second.empty()) {
    doc += "\n\n" + it->second;
  }
  return doc;
}

List StringList(const std::vector<std::string>& items) {
  List out;
  for (const std::string& s : items) out.push_back(s);
  return out;
}

}  // namespace

Value BuildOpenApiDocument(const OpenApiInput& input) {
  JsonSchemaBuilder b;
  Dict paths;
  // The endpoints in the order core.create_endpoints registers them.
  for (const core::EndpointInfo& e : core::Endpoints()) {
    if (!core::IsServed(e, input.endpoint_docs.contains(e.id), input.debug)) continue;
    const std::string path = "/" + std::string(e.name);
    switch (e.id) {
      case core::EndpointId::kApply: AddApplySchemas(input, b); break;
      case core::EndpointId::kJacobian:
      case core::EndpointId::kJacobianVectorProduct:
      case core::EndpointId::kVectorJacobianProduct:
      case core::EndpointId::kHessianVectorProduct: AddGradientSchemas(e, input, b); break;
      case core::EndpointId::kHealth:
        // health's return annotation is dict[str, Any]; FastAPI titles its schema after the route.
        paths.set(path, Operation(e.name, "get", e.doc, "",
                                  Dict{{"additionalProperties", true},
                                       {"type", "object"},
                                       {"title", "Response Health Health Get"}},
                                  false));
        continue;
      case core::EndpointId::kAbstractEval: AddAbstractEvalSchemas(input, b); break;
      case core::EndpointId::kTest:
        for (const char* name : {"TestSpec", "TestCliConfig", "TestOutputSchema"}) b.AddReferenceModel(name);
        break;
      case core::EndpointId::kCount: continue;  // no row has it
    }
    // The wrapped endpoints take the Accept header (negotiated output encoding).
    paths.set(path, Operation(e.name, "post", EndpointDocstring(e, input), e.request_model,
                              SchemaRef(e.response_model), e.kind == core::EndpointKind::kWrapped));
  }
  b.AddReferenceModel("HTTPValidationError");
  b.AddReferenceModel("ValidationError");

  Dict schemas;  // sorted by name, as FastAPI lists them
  for (const auto& [name, schema] : b.definitions) {
    schemas.set(name, FastApiComponentSchema(schema, name));
  }

  Dict info{{"title", input.title}};
  if (!input.description.empty()) info.set("description", input.description);
  info.set("version", input.version);
  return Dict{{"openapi", "3.1.0"},
              {"info", std::move(info)},
              {"paths", std::move(paths)},
              {"components", Dict{{"schemas", std::move(schemas)}}},
              {"x-supported-output-formats", StringList(input.output_formats)},
              {"x-supported-gpu-transports", StringList(input.gpu_transports)},
              {"x-supported-compressions", StringList(input.compressions)}};
}

}  // namespace tesscpp::cpp_kind
