// The /openapi.json document of the example components against what
// tesseract-core 1.15.0's runtime published for the equivalent Python fixtures
// (tests/data/golden/runtime, recorded by tests/golden/generate_runtime.py
// with TESSERACT_NAME=<fixture>, no version or description, debug off).
// Clients diff these documents, so the comparison is exact, key order included.
#include "cpp_kind/openapi.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status_matchers.h"
#include "cpp_kind/cpp_component.h"
#include "support/test_files.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/loader/component_library.h"

namespace tesscpp::cpp_kind {
namespace {

std::shared_ptr<const ComponentLibrary> Load(const std::string& name) {
  auto library = ComponentLibrary::Open(std::string(TESS_EXAMPLES_DIR) + "/lib" + name + ".so");
  if (!library.ok()) ADD_FAILURE() << library.status().ToString();
  return library.ok() ? *library : nullptr;
}

// What the runtime passes for a component served as the fixtures were recorded.
OpenApiInput InputFor(const Component& c) {
  OpenApiInput in;
  in.title = c.name();
  in.version = "unknown";
  in.inputs = c.input_schema();
  in.outputs = c.output_schema();
  in.endpoint_docs = EndpointDocs(c);
  return in;
}

Value ParseJson(std::string_view text) {
  auto v = ReadJson(text);
  EXPECT_OK(v);
  return v.ok() ? *v : Value();
}

Value Golden(const std::string& name) {
  return ParseJson(testing::ReadFile(testing::DataPath("golden/runtime/" + name + ".openapi.json")));
}

std::string Serialized(const Value& v) {
  auto bytes = WriteJson(v);
  EXPECT_OK(bytes);
  return bytes.ok() ? std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()) : "";
}

// Where `actual` first departs from `expected` (values or key order), or "":
// documents of tens of kilobytes that differ somewhere need pointing at the spot.
std::string FirstDifference(const Value& actual, const Value& expected, const std::string& at = "") {
  if (actual.is_dict() && expected.is_dict()) {
    auto a = actual.as_dict().begin();
    auto e = expected.as_dict().begin();
    for (; a != actual.as_dict().end() && e != expected.as_dict().end(); ++a, ++e) {
      if (a->first != e->first) {
        return at + ": key '" + a->first + "' where the reference has '" + e->first + "'";
      }
      if (std::string d = FirstDifference(a->second, e->second, at + "/" + a->first); !d.empty()) return d;
    }
    if (a != actual.as_dict().end()) return at + ": extra key '" + a->first + "'";
    if (e != expected.as_dict().end()) return at + ": missing key '" + e->first + "'";
    return "";
  }
  if (actual.is_list() && expected.is_list() && actual.as_list().size() == expected.as_list().size()) {
    for (size_t i = 0; i < actual.as_list().size(); ++i) {
      std::string d =
          FirstDifference(actual.as_list()[i], expected.as_list()[i], at + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  if (actual == expected && Serialized(actual) == Serialized(expected)) return "";
  return at + ": " + Serialized(actual) + " where the reference has " + Serialized(expected);
}

void ExpectSameDocument(const Value& actual, const Value& expected) {
  EXPECT_EQ(FirstDifference(actual, expected), "");
  EXPECT_TRUE(actual == expected);
  // Key order too, by the serialised forms (not printed: FirstDifference says where).
  EXPECT_TRUE(Serialized(actual) == Serialized(expected));
}

class OpenApiGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenApiGoldenTest, MatchesReferenceDocument) {
  auto library = Load(GetParam());
  ASSERT_NE(library, nullptr);
  ExpectSameDocument(BuildOpenApiDocument(InputFor(library->component())), Golden(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Examples, OpenApiGoldenTest,
                         ::testing::Values("vectoradd", "univariate", "meshstats", "noop"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Recorded from the reference with TESSERACT_DEBUG=1 (vectoradd): the /test
// route and the three models it brings; the rest of the document is unchanged.
constexpr std::string_view kDebugAdditions = R"json({
  "paths": {
    "/test": {
      "post": {
        "summary": "Test",
        "description": "Run a single regression test against a Tesseract endpoint.\n\nTests an endpoint by calling it with specified inputs and comparing outputs\nagainst expected values or verifying expected exceptions are raised.\n\nArgs:\n    payload: Test specification containing:\n        - endpoint: Name of endpoint to test (e.g., \"apply\", \"jacobian\")\n        - payload: Input data for the endpoint\n        - expected_outputs: Expected output data (mutually exclusive with expected_exception)\n        - expected_exception: Expected exception type or name (mutually exclusive with expected_outputs)\n        - expected_exception_regex: Optional regex pattern for exception message\n        - atol: Absolute tolerance for numeric comparisons (default: 1e-8)\n        - rtol: Relative tolerance for numeric comparisons (default: 1e-5)\n\nReturns:\n    TestOutputSchema with:\n        - status: \"passed\" | \"failed\" | \"error\"\n        - message: Empty for passed tests, error details for failed/error\n        - endpoint: Name of the tested endpoint\n\nNote:\n    This endpoint is designed for testing and CI/CD workflows.\n    All outcomes return HTTP 200 with status in the response body regardless of success/failure.",
        "operationId": "test_test_post",
        "requestBody": {
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestSpec"}}},
          "required": true
        },
        "responses": {
          "200": {
            "description": "Successful Response",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestOutputSchema"}}}
          },
          "422": {
            "description": "Validation Error",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}}
          }
        }
      }
    }
  },
  "schemas": {
    "TestCliConfig": {
      "properties": {
        "input_path": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Input Path"},
        "volume_mounts": {
          "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
          "title": "Volume Mounts"
        },
        "user": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "User"}
      },
      "type": "object",
      "title": "TestCliConfig",
      "description": "CLI configuration overrides for test execution.\n\nContains original CLI arguments for test configuration.\nOnly includes safe config options that don't pose security risks."
    },
    "TestOutputSchema": {
      "properties": {
        "status": {"type": "string", "enum": ["passed", "failed", "error"], "title": "Status"},
        "message": {"type": "string", "title": "Message"},
        "endpoint": {"type": "string", "title": "Endpoint"}
      },
      "type": "object",
      "required": ["status", "message", "endpoint"],
      "title": "TestOutputSchema",
      "description": "Output schema for the test endpoint.\n\nAttributes:\n    status: Test result status:\n        - \"passed\": Test passed all validations\n        - \"failed\": Test failed validation (output mismatch)\n        - \"error\": Endpoint raised unexpected exception\n    message: Empty for passed tests, error details for failed/error\n    endpoint: Name of the tested endpoint"
    },
    "TestSpec": {
      "properties": {
        "endpoint": {"type": "string", "title": "Endpoint"},
        "payload": {"additionalProperties": true, "type": "object", "title": "Payload"},
        "expected_outputs": {
          "anyOf": [{"additionalProperties": true, "type": "object"}, {"type": "null"}],
          "title": "Expected Outputs"
        },
        "expected_exception": {"anyOf": [{}, {"type": "null"}], "title": "Expected Exception"},
        "expected_exception_regex": {
          "anyOf": [{"type": "string"}, {"type": "null"}],
          "title": "Expected Exception Regex"
        },
        "atol": {"type": "number", "title": "Atol", "default": 1e-08},
        "rtol": {"type": "number", "title": "Rtol", "default": 1e-05},
        "skip_output_path_checks": {"type": "boolean", "title": "Skip Output Path Checks", "default": false},
        "cli_config": {"anyOf": [{"$ref": "#/components/schemas/TestCliConfig"}, {"type": "null"}]}
      },
      "type": "object",
      "required": ["endpoint", "payload"],
      "title": "TestSpec",
      "description": "Test specification for a single regression test.\n\nMust provide exactly one of:\n- expected_outputs: For testing successful execution\n- expected_exception: For testing exception handling"
    }
  }
})json";

TEST(OpenApi, DebugAddsTestRouteAndItsModels) {
  auto library = Load("vectoradd");
  ASSERT_NE(library, nullptr);
  OpenApiInput in = InputFor(library->component());
  in.debug = true;

  Value expected = Golden("vectoradd");
  const Value additions = ParseJson(kDebugAdditions);
  expected.as_dict().at("paths").as_dict().set("/test",
                                               additions.as_dict().at("paths").as_dict().at("/test"));
  Value& schemas = expected.as_dict().at("components").as_dict().at("schemas");
  std::map<std::string, Value> sorted(schemas.as_dict().begin(), schemas.as_dict().end());
  for (const auto& [name, schema] : additions.as_dict().at("schemas").as_dict()) sorted.emplace(name, schema);
  Value::Dict resorted;
  for (auto& [name, schema] : sorted) resorted.set(name, std::move(schema));
  schemas = std::move(resorted);

  ExpectSameDocument(BuildOpenApiDocument(in), expected);
}

TEST(OpenApi, VersionDescriptionAndGpuTransportsAreAdvertised) {
  auto library = Load("vectoradd");
  ASSERT_NE(library, nullptr);
  OpenApiInput in = InputFor(library->component());
  in.version = "1.2.3";
  in.description = "Adds\nvectors.";
  in.gpu_transports = {"none", "cuda_ipc"};

  // As the reference publishes with TESSERACT_VERSION, TESSERACT_DESCRIPTION
  // and TESSERACT_GPU_TRANSPORT=cuda_ipc set: the description sits between
  // title and version, and nothing else changes.
  Value expected = Golden("vectoradd");
  expected.as_dict().set(
      "info", Value::Dict{{"title", "vectoradd"}, {"description", "Adds\nvectors."}, {"version", "1.2.3"}});
  expected.as_dict().set("x-supported-gpu-transports", Value::List{"none", "cuda_ipc"});

  ExpectSameDocument(BuildOpenApiDocument(in), expected);
}

// Field kinds the examples do not use, against the reference's rendering of
// this Python schema (InputSchema and OutputSchema as below, with apply,
// abstract_eval, jacobian and jacobian_vector_product defined):
//
//   class Leaf(BaseModel):
//       v: Differentiable[Array[(None,), Float32]]
//   class InputSchema(BaseModel):
//       darr: dict[str, Differentiable[Array[(None,), Float32]]] = Field(description="d")
//       anyarr: Differentiable[Array[..., None]]
//       x2y_z: int = 0
//       t_bool: Array[(3,), "bool"] = [True]
//       bc: Array[(3,), Float32] = [1.0]
//       nodt: Array[(None,), None] = [1, 2]
//       sc: Float32 = 1
//       bad: Array[(None,), Float32] = "abc"
//       nested_def: dict[str, Any] = {"b": {"z": 1, "a": None}, "a": [{"y": 1, "x": 2}]}
//       oa: Optional[Any] = None
//       od: Optional[dict[str, int]] = Field(default={"k": 1}, description="od")
//       dm: dict[str, Leaf] = {}
//       ll: list[list[int]]
//       ol: Optional[list[Leaf]] = None
//       m_opt: Optional[Leaf] = None
//   class OutputSchema(BaseModel):
//       o2: list[Differentiable[Array[(2,), Float64]]]
constexpr std::string_view kKindsComponents = R"json({
  "AbstractEval_InputSchema": {
    "properties": {
      "darr": {
        "additionalProperties": {"$ref": "#/components/schemas/ShapeDType"},
        "type": "object",
        "title": "Darr",
        "description": "d"
      },
      "anyarr": {"$ref": "#/components/schemas/ShapeDType"},
      "x2y_z": {"type": "integer", "title": "X2Y Z", "default": 0},
      "t_bool": {"$ref": "#/components/schemas/ShapeDType", "default": {"shape": [3], "dtype": "bool"}},
      "bc": {"$ref": "#/components/schemas/ShapeDType", "default": {"shape": [3], "dtype": "float32"}},
      "nodt": {"$ref": "#/components/schemas/ShapeDType", "default": {"shape": [2], "dtype": "int64"}},
      "sc": {"$ref": "#/components/schemas/ShapeDType", "default": {"shape": [], "dtype": "float32"}},
      "bad": {"$ref": "#/components/schemas/ShapeDType", "default": "abc"},
      "nested_def": {
        "additionalProperties": true,
        "type": "object",
        "title": "Nested Def",
        "default": {"b": {"z": 1}, "a": [{"x": 2, "y": 1}]}
      },
      "oa": {"anyOf": [{}, {"type": "null"}], "title": "Oa"},
      "od": {
        "anyOf": [{"additionalProperties": {"type": "integer"}, "type": "object"}, {"type": "null"}],
        "title": "Od",
        "description": "od",
        "default": {"k": 1}
      },
      "dm": {
        "additionalProperties": {"$ref": "#/components/schemas/AbstractEval_Leaf"},
        "type": "object",
        "title": "Dm",
        "default": {}
      },
      "ll": {"items": {"items": {"type": "integer"}, "type": "array"}, "type": "array", "title": "Ll"},
      "ol": {
        "anyOf": [
          {"items": {"$ref": "#/components/schemas/AbstractEval_Leaf"}, "type": "array"},
          {"type": "null"}
        ],
        "title": "Ol"
      },
      "m_opt": {"anyOf": [{"$ref": "#/components/schemas/AbstractEval_Leaf"}, {"type": "null"}]}
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["darr", "anyarr", "ll"],
    "title": "AbstractEval_InputSchema"
  },
  "ApplyInputSchema": {
    "properties": {
      "inputs": {
        "$ref": "#/components/schemas/Apply_InputSchema",
        "description": "The input data to apply the Tesseract to."
      }
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["inputs"],
    "title": "ApplyInputSchema",
    "differentiable_arrays": {
      "anyarr": {},
      "darr.{}": {"dtype": "float32", "shape": [null]},
      "dm.{}.v": {"dtype": "float32", "shape": [null]},
      "m_opt.v": {"dtype": "float32", "shape": [null]},
      "ol.[].v": {"dtype": "float32", "shape": [null]}
    },
    "field_order": {
      "": ["darr", "anyarr", "x2y_z", "t_bool", "bc", "nodt", "sc", "bad", "nested_def", "oa", "od", "dm",
           "ll", "ol", "m_opt"],
      "dm.{}": ["v"],
      "m_opt": ["v"],
      "ol.[]": ["v"]
    }
  },
  "JacobianInputSchema": {
    "properties": {
      "inputs": {
        "$ref": "#/components/schemas/Jacobian_InputSchema",
        "description": "The input data to compute the Jacobian at."
      },
      "jac_inputs": {
        "items": {
          "anyOf": [
            {"type": "string", "pattern": "^darr\\.\\{(?:[^{}\\\\]|\\\\.)+\\}$"},
            {"type": "string", "const": "anyarr"},
            {"type": "string", "pattern": "^dm\\.\\{(?:[^{}\\\\]|\\\\.)+\\}\\.v$"},
            {"type": "string", "pattern": "^ol\\.\\[\\d+\\]\\.v$"},
            {"type": "string", "const": "m_opt.v"}
          ]
        },
        "type": "array",
        "minItems": 1,
        "uniqueItems": true,
        "title": "Jac Inputs",
        "description": "The set of differentiable inputs to compute the Jacobian with respect to."
      },
      "jac_outputs": {
        "items": {"type": "string", "pattern": "^o2\\.\\[\\d+\\]$"},
        "type": "array",
        "minItems": 1,
        "uniqueItems": true,
        "title": "Jac Outputs",
        "description": "The set of differentiable outputs to compute the Jacobian of."
      }
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["inputs", "jac_inputs", "jac_outputs"],
    "title": "JacobianInputSchema"
  }
})json";

TEST(OpenApi, OtherFieldKindsAsTheReferenceRendersThem) {
  const SchemaType f32_vector = SchemaType::Array({kAnyDim}, Dtype::kFloat32).Differentiable();
  auto leaf = *ModelSchema::Make("Leaf", {Field("v", f32_vector)});
  const Value nested_default = Value::Dict{{"b", Value::Dict{{"z", 1}, {"a", Value()}}},
                                           {"a", Value::List{Value::Dict{{"y", 1}, {"x", 2}}}}};
  OpenApiInput in;
  in.title = "kinds";
  in.version = "unknown";
  in.inputs = *ModelSchema::Make(
      "InputSchema",
      {Field("darr", SchemaType::Dict(f32_vector), "d"),
       Field("anyarr", SchemaType::Array(ShapeSpec::AnyRank(), std::nullopt).Differentiable()),
       Field("x2y_z", SchemaType::Int(), "", Value(0)),
       Field("t_bool", SchemaType::Array({3}, Dtype::kBool), "", Value(Value::List{true})),
       Field("bc", SchemaType::Array({3}, Dtype::kFloat32), "", Value(Value::List{1.0})),
       Field("nodt", SchemaType::Array({kAnyDim}, std::nullopt), "", Value(Value::List{1, 2})),
       Field("sc", SchemaType::Scalar(Dtype::kFloat32), "", Value(1)),
       Field("bad", SchemaType::Array({kAnyDim}, Dtype::kFloat32), "", Value("abc")),
       Field("nested_def", SchemaType::Dict(SchemaType::Any()), "", nested_default),
       Field("oa", SchemaType::Optional(SchemaType::Any()), "", Value()),
       Field("od", SchemaType::Optional(SchemaType::Dict(SchemaType::Int())), "od",
             Value(Value::Dict{{"k", 1}})),
       Field("dm", SchemaType::Dict(SchemaType::Model(leaf)), "", Value(Value::Dict{})),
       Field("ll", SchemaType::List(SchemaType::List(SchemaType::Int()))),
       Field("ol", SchemaType::Optional(SchemaType::List(SchemaType::Model(leaf))), "", Value()),
       Field("m_opt", SchemaType::Optional(SchemaType::Model(leaf)), "", Value())});
  in.outputs = *ModelSchema::Make(
      "OutputSchema",
      {Field("o2", SchemaType::List(SchemaType::Array({2}, Dtype::kFloat64).Differentiable()))});
  in.endpoint_docs = {{core::EndpointId::kApply, ""},
                      {core::EndpointId::kAbstractEval, ""},
                      {core::EndpointId::kJacobian, ""},
                      {core::EndpointId::kJacobianVectorProduct, ""}};

  const Value doc = BuildOpenApiDocument(in);
  const Value::Dict& schemas = doc.as_dict().at("components").as_dict().at("schemas").as_dict();
  const Value recorded = ParseJson(kKindsComponents);
  for (const auto& [name, expected] : recorded.as_dict()) {
    SCOPED_TRACE(name);
    ASSERT_NE(schemas.find(name), nullptr);
    ExpectSameDocument(*schemas.find(name), expected);
  }
  // With a single wildcard output path, the response's keys are constrained
  // by a pattern (patternProperties) rather than listed.
  const Value::Dict& jvp_outputs = schemas.at("JVPOutputSchema").as_dict();
  std::vector<std::string> keys;
  for (const auto& [key, unused] : jvp_outputs) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"patternProperties", "type", "title", "description"}));
  EXPECT_NE(jvp_outputs.at("patternProperties").as_dict().find("^o2\\.\\[\\d+\\]$"), nullptr);
}

TEST(OpenApi, EndpointDescriptionIsTheCleanedDocstring) {
  auto library = Load("noop");
  ASSERT_NE(library, nullptr);
  OpenApiInput in = InputFor(library->component());
  in.endpoint_docs[core::EndpointId::kApply] =
      "\n    Sums things.\n\n\tKeeps a tab-indented line.\n    \f Hidden after a form feed.\n  ";

  // inspect.cleandoc(doc).split("\f")[0].strip(), as FastAPI does, computed by Python.
  const Value doc = BuildOpenApiDocument(in);
  EXPECT_EQ(
      doc.as_dict().at("paths").as_dict().at("/apply").as_dict().at("post").as_dict().at("description"),
      Value("Apply the Tesseract to the input data.\n\n\nSums things.\n\n    Keeps a tab-indented line."));
}

}  // namespace
}  // namespace tesscpp::cpp_kind
