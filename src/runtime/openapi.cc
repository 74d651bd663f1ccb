// The /openapi.json document. tesseract-core 1.15 gets it from FastAPI, which
// asks pydantic for the JSON schema of every request and response model and
// then re-validates the whole document through its own OpenAPI models. Clients
// diff these documents, so this file reproduces both steps rather than just the
// content: model_json_schema.h builds schemas as pydantic builds them,
// fastapi_schema.h gives them the reference's key order, and this file adds
// the runtime's request/response models and the paths.
#include "runtime/openapi.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/endpoint_schemas.h"
#include "runtime/fastapi_schema.h"
#include "runtime/model_json_schema.h"
#include "runtime/py_text.h"

namespace tesscpp::runtime {
namespace {

using Dict = Value::Dict;
using List = Value::List;

// The runtime's own docstrings of its endpoint functions (core.py), raw: the
// author's docstring is appended after a blank line and the whole is cleaned.
constexpr std::string_view kJacobianDoc =
    "Computes the Jacobian of the Tesseract.\n\n"
    "            Differentiates ``jac_outputs`` with respect to ``jac_inputs``, at the point ``inputs``.\n"
    "            ";
constexpr std::string_view kJvpDoc =
    "Compute the Jacobian vector product of the Tesseract at the input data.\n\n"
    "            Evaluates the Jacobian vector product between the Jacobian given by ``jvp_outputs``\n"
    "            with respect to ``jvp_inputs`` at the point ``inputs`` and the given tangent vector.\n"
    "            ";
constexpr std::string_view kVjpDoc =
    "Compute the Jacobian vector product of the Tesseract at the input data.\n\n"
    "            Computes the vector Jacobian product between the Jacobian given by ``vjp_outputs``\n"
    "            with respect to ``vjp_inputs`` at the point ``inputs`` and the given cotangent vector.\n"
    "            ";
constexpr std::string_view kTestDoc = R"(Run a single regression test against a Tesseract endpoint.

        Tests an endpoint by calling it with specified inputs and comparing outputs
        against expected values or verifying expected exceptions are raised.

        Args:
            payload: Test specification containing:
                - endpoint: Name of endpoint to test (e.g., "apply", "jacobian")
                - payload: Input data for the endpoint
                - expected_outputs: Expected output data (mutually exclusive with expected_exception)
                - expected_exception: Expected exception type or name (mutually exclusive with expected_outputs)
                - expected_exception_regex: Optional regex pattern for exception message
                - atol: Absolute tolerance for numeric comparisons (default: 1e-8)
                - rtol: Relative tolerance for numeric comparisons (default: 1e-5)

        Returns:
            TestOutputSchema with:
                - status: "passed" | "failed" | "error"
                - message: Empty for passed tests, error details for failed/error
                - endpoint: Name of the tested endpoint

        Note:
            This endpoint is designed for testing and CI/CD workflows.
            All outcomes return HTTP 200 with status in the response body regardless of success/failure.
        )";

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
      {"type", "array"}, {"items", PathsJson(paths)}, {"uniqueItems", true},
      {"minItems", 1},   {"title", PyTitle(name)},    {"description", description},
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

// The component schemas of create_gradient_schema for one gradient endpoint.
struct GradientSpec {
  std::string_view endpoint;      // "jacobian"
  std::string_view docstring;     // the runtime's, as in core.py
  std::string_view model_prefix;  // "Jacobian_"
  std::string_view request;       // "JacobianInputSchema"
  std::string_view response;      // "JacobianOutputSchema"
  std::string_view short_name;    // "jac", "jvp", "vjp": prefix of the request's fields
  std::string_view noun;          // "Jacobian", "JVP", "VJP" in the field descriptions
};

constexpr GradientSpec kGradients[] = {
    {"jacobian", kJacobianDoc, "Jacobian_", "JacobianInputSchema", "JacobianOutputSchema", "jac", "Jacobian"},
    {"jacobian_vector_product", kJvpDoc, "Jvp_", "JVPInputSchema", "JVPOutputSchema", "jvp", "JVP"},
    {"vector_jacobian_product", kVjpDoc, "Vjp_", "VJPInputSchema", "VJPOutputSchema", "vjp", "VJP"},
};

void AddGradientSchemas(const GradientSpec& g, const OpenApiInput& input, JsonSchemaBuilder& b) {
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
  if (g.short_name == "jac") {
    response =
        WithKeys(DictJson(PathsJson(out_paths), DictJson(PathsJson(in_paths), any_array)),
                 {{"description",
                   "Container for the results of Jacobian computations. The result represents a nested "
                   "structure of the Jacobian matrix as a mapping with structure ``{jac_outputs: "
                   "{jac_inputs: array}}``. The shape of each array is the concatenation of the shapes of "
                   "the output and input arrays, i.e. ``(*output_array.shape, *input_array.shape)``."}});
  } else if (g.short_name == "jvp") {
    properties.set(
        "tangent_vector",
        WithKeys(DictJson(PathsJson(in_paths), any_array),
                 {{"title", "Tangent Vector"},
                  {"description",
                   "Tangent vector to multiply the Jacobian with. Expected to be a mapping with structure "
                   "``{jvp_inputs: array}``. The shape of each array is the same as the shape of the "
                   "corresponding input array."}}));
    response =
        WithKeys(DictJson(PathsJson(out_paths), any_array),
                 {{"description",
                   "Container for the results of Jacobian-vector products. The result is a mapping with "
                   "structure ``{jvp_outputs: array}``. The shape of each array is the same as the shape of "
                   "the corresponding output array."}});
  } else {
    properties.set(
        "cotangent_vector",
        WithKeys(DictJson(PathsJson(out_paths), any_array),
                 {{"title", "Cotangent Vector"},
                  {"description",
                   "Cotangent vector to multiply the Jacobian with. Expected to be a mapping with "
                   "structure ``{vjp_outputs: array}``. The shape of each array is the same as the shape "
                   "of the corresponding output array."}}));
    response =
        WithKeys(DictJson(PathsJson(in_paths), any_array),
                 {{"description",
                   "Container for the results of vector-Jacobian products. The result is a mapping with "
                   "structure ``{vjp_inputs: array}``. The shape of each array is the same as the shape of "
                   "the corresponding input array."}});
  }
  b.definitions[std::string(g.request)] = RequestModel(g.request, std::move(properties));
  response.as_dict().set("title", g.response);
  b.definitions[std::string(g.response)] = std::move(response);
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
  Dict op{{"summary", PyTitle(name)}};
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

std::string EndpointDocstring(std::string_view runtime_doc, const OpenApiInput& input,
                              const std::string& endpoint) {
  std::string doc(runtime_doc);
  if (auto it = input.endpoint_docs.find(endpoint); it != input.endpoint_docs.end() && !it->second.empty()) {
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
  const auto implements = [&](const std::string& endpoint) { return input.endpoint_docs.contains(endpoint); };

  // The endpoints in the order core.create_endpoints registers them.
  const Value apply_inputs = b.ModelRef(*DeriveModel(*input.inputs, "Apply_", false));
  const Value apply_outputs = b.ModelRef(*DeriveModel(*input.outputs, "Apply_", false));
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
  paths.set("/apply", Operation("apply", "post",
                                EndpointDocstring("Apply the Tesseract to the input data.", input, "apply"),
                                "ApplyInputSchema", SchemaRef("ApplyOutputSchema"), true));

  for (const GradientSpec& g : kGradients) {
    const std::string endpoint(g.endpoint);
    if (!implements(endpoint)) continue;
    AddGradientSchemas(g, input, b);
    paths.set("/" + endpoint, Operation(endpoint, "post", EndpointDocstring(g.docstring, input, endpoint),
                                        g.request, SchemaRef(g.response), true));
  }

  // health's return annotation is dict[str, Any]; FastAPI titles its schema after the route.
  paths.set("/health", Operation("health", "get", "Get health status of the Tesseract instance.", "",
                                 Dict{{"additionalProperties", true},
                                      {"type", "object"},
                                      {"title", "Response Health Health Get"}},
                                 false));

  if (implements("abstract_eval")) {
    const Value abstract_inputs = b.ModelRef(*DeriveModel(*input.inputs, "AbstractEval_", true));
    const Value abstract_outputs = b.ModelRef(*DeriveModel(*input.outputs, "AbstractEval_", true));
    b.definitions["AbstractInputSchema"] = RequestModel(
        "AbstractInputSchema",
        Dict{{"inputs",
              WithKeys(abstract_inputs,
                       {{"description",
                         "The abstract input data to evaluate the Tesseract on. Has the same structure as "
                         "InputSchema, but with array fields replaced by ShapeDType."}})}});
    b.definitions["AbstractOutputSchema"] = WithKeys(
        abstract_outputs, {{"title", "AbstractOutputSchema"},
                           {"description",
                            "Abstract outputs with the same structure as OutputSchema, but with array "
                            "fields replaced by ShapeDType."}});
    paths.set("/abstract_eval",
              Operation("abstract_eval", "post",
                        EndpointDocstring("Perform abstract evaluation of the Tesseract on the input data.",
                                          input, "abstract_eval"),
                        "AbstractInputSchema", SchemaRef("AbstractOutputSchema"), false));
  }

  if (input.debug) {
    for (const char* name : {"TestSpec", "TestCliConfig", "TestOutputSchema"}) b.AddReferenceModel(name);
    paths.set("/test", Operation("test", "post", kTestDoc, "TestSpec", SchemaRef("TestOutputSchema"), false));
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

}  // namespace tesscpp::runtime
