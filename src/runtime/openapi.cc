// The /openapi.json document. tesseract-core 1.15 gets it from FastAPI, which
// asks pydantic for the JSON schema of every request and response model and
// then re-validates the whole document through its own OpenAPI models. Clients
// diff these documents, so this file reproduces both steps rather than just the
// content: schemas are built as pydantic builds them and then put through
// PydanticSort and FastApiSchema, which give the reference's key order.
#include "runtime/openapi.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/endpoint_schemas.h"
#include "runtime/py_text.h"
#include "tesscpp/json.h"
#include "tesscpp/validate.h"

namespace tesscpp::runtime {
namespace {

using Dict = Value::Dict;
using List = Value::List;

// ---------------------------------------------------------------------------
// Python's text functions that shape titles and descriptions.

// name.title().replace("_", " ").strip(): pydantic's title for a field
// ("n_points" -> "N Points") and, equally, FastAPI's summary for a route.
std::string PyTitle(std::string_view name) {
  std::string out;
  bool after_letter = false;
  for (const char c : name) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) {
      out += after_letter ? static_cast<char>(c | 0x20) : static_cast<char>(c & ~0x20);
    } else {
      out += c == '_' ? ' ' : c;
    }
    after_letter = letter;
  }
  return std::string(PyStrip(out));
}

// str.expandtabs(): tab stops every 8 columns, counted in characters.
std::string ExpandTabs(std::string_view s) {
  std::string out;
  size_t column = 0;
  for (const char c : s) {
    if (c == '\t') {
      const size_t spaces = 8 - column % 8;
      out.append(spaces, ' ');
      column += spaces;
      continue;
    }
    out += c;
    if (c == '\n' || c == '\r') {
      column = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {  // not a UTF-8 continuation byte
      ++column;
    }
  }
  return out;
}

// inspect.cleandoc: the first line stripped on the left, the common indent of
// the other non-blank lines removed, empty lines dropped at both ends.
std::string CleanDoc(std::string_view doc) {
  const std::string expanded = ExpandTabs(doc);
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    const size_t end = expanded.find('\n', start);
    lines.push_back(expanded.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  size_t margin = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t indent = std::find_if_not(lines[i].begin(), lines[i].end(), IsPySpace) - lines[i].begin();
    if (indent < lines[i].size()) margin = std::min(margin, indent);
  }
  lines[0].erase(0, std::find_if_not(lines[0].begin(), lines[0].end(), IsPySpace) - lines[0].begin());
  if (margin != std::string::npos) {
    for (size_t i = 1; i < lines.size(); ++i) lines[i].erase(0, margin);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t first = 0;
  while (first < lines.size() && lines[first].empty()) ++first;
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) {
    if (i > first) out += '\n';
    out += lines[i];
  }
  return out;
}

// FastAPI's operation description: the cleaned docstring up to a form feed, stripped.
std::string RouteDescription(std::string_view docstring) {
  const std::string cleaned = CleanDoc(docstring);
  const std::string_view text = cleaned;
  return std::string(PyStrip(text.substr(0, text.find('\f'))));
}

// ---------------------------------------------------------------------------
// What FastAPI does to pydantic's output.

// pydantic's GenerateJsonSchema.sort: object keys sorted at every depth, except
// directly under "properties" and "default" (field order, the value as given).
// A list passes its own key down to its items.
Value PydanticSort(const Value& v, std::string_view parent_key) {
  if (v.is_list()) {
    List out;
    for (const Value& item : v.as_list()) out.push_back(PydanticSort(item, parent_key));
    return out;
  }
  if (!v.is_dict()) return v;
  std::vector<const Dict::Item*> items;
  for (const Dict::Item& item : v.as_dict()) items.push_back(&item);
  if (parent_key != "properties" && parent_key != "default") {
    std::sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  Dict out;
  for (const Dict::Item* item : items) out.set(item->first, PydanticSort(item->second, item->first));
  return out;
}

// FastAPI encodes the document with exclude_none: a member whose value is null
// disappears at any depth (a null inside a list stays).
Value DropNullMembers(const Value& v) {
  if (v.is_list()) {
    List out;
    for (const Value& item : v.as_list()) out.push_back(DropNullMembers(item));
    return out;
  }
  if (!v.is_dict()) return v;
  Dict out;
  for (const auto& [key, member] : v.as_dict()) {
    if (!member.is_null()) out.set(key, DropNullMembers(member));
  }
  return out;
}

// The fields of FastAPI's openapi.models.Schema, in declaration order (by alias).
// clang-format off
constexpr std::array<std::string_view, 61> kSchemaFields = {
    // JSON Schema core, applicators
    "$schema", "$vocabulary", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef", "$defs", "$comment",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
    "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
    // validation
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    // format, content, meta-data, OpenAPI
    "format", "contentEncoding", "contentMediaType", "contentSchema", "title", "description", "default",
    "deprecated", "readOnly", "writeOnly", "examples", "discriminator", "xml", "externalDocs", "example"};
// clang-format on

bool IsOneOf(std::string_view key, std::initializer_list<std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// FastAPI validates every component schema into its Schema model and dumps it
// by alias: the model's fields come out in declaration order, extra keys
// (array_flags, differentiable_arrays, ...) after them as they were, numbers of
// float-typed fields as floats, and nested schemas the same way.
Value FastApiSchema(const Value& schema) {
  if (!schema.is_dict()) return schema;  // `true` / `false` schemas
  const Dict& in = schema.as_dict();
  Dict out;
  for (const std::string_view key : kSchemaFields) {
    const Value* v = in.find(key);
    if (v == nullptr) continue;
    Value field;
    if (IsOneOf(key, {"allOf", "anyOf", "oneOf", "prefixItems"})) {
      List schemas;
      for (const Value& s : v->as_list()) schemas.push_back(FastApiSchema(s));
      field = std::move(schemas);
    } else if (IsOneOf(key, {"$defs", "dependentSchemas", "properties", "patternProperties"})) {
      Dict schemas;
      for (const auto& [name, s] : v->as_dict()) schemas.set(name, FastApiSchema(s));
      field = std::move(schemas);
    } else if (IsOneOf(key,
                       {"not", "if", "then", "else", "items", "contains", "additionalProperties",
                        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"})) {
      field = FastApiSchema(*v);
    } else if (IsOneOf(key, {"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})) {
      field = v->as_number();
    } else if (key == "discriminator") {  // its own model: propertyName, mapping
      Dict d;
      for (const std::string_view k : {"propertyName", "mapping"}) {
        if (const Value* m = v->as_dict().find(k)) d.set(std::string(k), *m);
      }
      field = std::move(d);
    } else {
      field = *v;
    }
    out.set(std::string(key), std::move(field));
  }
  for (const auto& [key, v] : in) {
    if (std::find(kSchemaFields.begin(), kSchemaFields.end(), key) == kSchemaFields.end()) out.set(key, v);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Fixed parts of the reference's document.

// Models of the reference that do not depend on the component, as pydantic
// renders them, without their docstrings (kModelDocs).
constexpr std::string_view kFixedSchemas = R"json({
  "Base64ArrayData": {
    "properties": {
      "buffer": {
        "type": "string",
        "title": "Buffer",
        "description": "Base64 encoded binary buffer",
        "examples": ["<base64 encoded string>"]
      },
      "encoding": {"type": "string", "const": "base64", "title": "Encoding"},
      "compression": {"anyOf": [{"type": "string", "const": "lz4"}, {"type": "null"}], "title": "Compression"}
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["buffer", "encoding"],
    "title": "Base64ArrayData"
  },
  "BinrefArrayData": {
    "properties": {
      "buffer": {"type": "string", "pattern": "^.+?(\\:\\d+(\\:\\d+)?)?$", "title": "Buffer"},
      "encoding": {"type": "string", "const": "binref", "title": "Encoding"},
      "compression": {"anyOf": [{"type": "string", "const": "lz4"}, {"type": "null"}], "title": "Compression"}
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["buffer", "encoding"],
    "title": "BinrefArrayData"
  },
  "CudaIpcArrayData": {
    "properties": {
      "buffer": {
        "type": "string",
        "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[A-Za-z0-9+/=]*:\\d+:\\d+$",
        "title": "Buffer",
        "description": "Packed CUDA IPC descriptor: <device>:<handle>:<storage_offset>:<storage_size>"
      },
      "encoding": {"type": "string", "const": "cuda_ipc", "title": "Encoding"},
      "compression": {"type": "null", "title": "Compression"}
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["buffer", "encoding"],
    "title": "CudaIpcArrayData"
  },
  "HTTPValidationError": {
    "properties": {
      "detail": {
        "items": {"$ref": "#/components/schemas/ValidationError"},
        "type": "array",
        "title": "Detail"
      }
    },
    "type": "object",
    "title": "HTTPValidationError"
  },
  "JsonArrayData": {
    "properties": {
      "buffer": {"$ref": "#/components/schemas/JsonValue"},
      "encoding": {"type": "string", "const": "json", "title": "Encoding"},
      "compression": {"type": "null", "title": "Compression"}
    },
    "additionalProperties": false,
    "type": "object",
    "required": ["buffer", "encoding"],
    "title": "JsonArrayData"
  },
  "JsonValue": {},
  "ShapeDType": {
    "properties": {
      "shape": {"items": {"type": "integer"}, "type": "array", "title": "Shape"},
      "dtype": {
        "type": "string",
        "enum": ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "bool", "uint8",
                 "uint16", "uint32", "uint64", "complex64", "complex128"],
        "title": "Dtype"
      }
    },
    "type": "object",
    "required": ["shape", "dtype"],
    "title": "ShapeDType"
  },
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
    "title": "TestCliConfig"
  },
  "TestOutputSchema": {
    "properties": {
      "status": {"type": "string", "enum": ["passed", "failed", "error"], "title": "Status"},
      "message": {"type": "string", "title": "Message"},
      "endpoint": {"type": "string", "title": "Endpoint"}
    },
    "type": "object",
    "required": ["status", "message", "endpoint"],
    "title": "TestOutputSchema"
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
    "title": "TestSpec"
  },
  "ValidationError": {
    "properties": {
      "loc": {
        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "type": "array",
        "title": "Location"
      },
      "msg": {"type": "string", "title": "Message"},
      "type": {"type": "string", "title": "Error Type"},
      "input": {"title": "Input"},
      "ctx": {"type": "object", "title": "Context"}
    },
    "type": "object",
    "required": ["loc", "msg", "type"],
    "title": "ValidationError"
  }
})json";

// The docstrings of the fixed models (pydantic's model description is the
// cleaned docstring), kept as text because they span lines.
struct ModelDoc {
  std::string_view model;
  std::string_view doc;
};
constexpr ModelDoc kModelDocs[] = {
    {"Base64ArrayData", "Data structure for base64 encoded binary buffers."},
    {"BinrefArrayData", R"(Data structure that dumps array data to binary file.

The buffer field format is ``<path>[:<offset>[:<compressed_size>]]``.
When compression is set, the buffer must include ``:<compressed_size>``
so readers know how many compressed bytes to read.)"},
    {"CudaIpcArrayData", R"(Data structure for CUDA IPC shared GPU memory handles.

The buffer field packs all four components as
``<device>:<handle>:<storage_offset>:<storage_size>``, where:

- ``device`` is the UUID of the CUDA device the memory lives on,
- ``handle`` is the base64-encoded 64-byte cudaIpcMemHandle_t (its base64
  alphabet never contains ``:``, so it is safe as a field delimiter), or
  empty for an empty array, which has no memory to share,
- ``storage_offset`` is the byte offset within the cudaMalloc allocation,
- ``storage_size`` is the total size in bytes of the cudaMalloc allocation.

This is only the JSON *schema* for the encoding; all the CUDA runtime
machinery that produces and consumes it lives in
:mod:`tesseract_core.runtime.cuda.ipc`.)"},
    {"JsonArrayData", "Data structure for json buffers (list of decimal numbers)."},
    {"ShapeDType", "Data structure describing an array's shape and data type."},
    {"TestCliConfig", R"(CLI configuration overrides for test execution.

Contains original CLI arguments for test configuration.
Only includes safe config options that don't pose security risks.)"},
    {"TestOutputSchema", R"(Output schema for the test endpoint.

Attributes:
    status: Test result status:
        - "passed": Test passed all validations
        - "failed": Test failed validation (output mismatch)
        - "error": Endpoint raised unexpected exception
    message: Empty for passed tests, error details for failed/error
    endpoint: Name of the tested endpoint)"},
    {"TestSpec", R"(Test specification for a single regression test.

Must provide exactly one of:
- expected_outputs: For testing successful execution
- expected_exception: For testing exception handling)"},
};

// The parts of every array leaf that do not depend on its shape and dtype.
constexpr std::string_view kArrayLeafParts = R"json({
  "object_type": {
    "type": "string",
    "const": "array",
    "title": "Object Type",
    "description": "Indicates that this dict can be parsed to an array.",
    "default": "array"
  },
  "data": {
    "oneOf": [
      {"$ref": "#/components/schemas/BinrefArrayData"},
      {"$ref": "#/components/schemas/Base64ArrayData"},
      {"$ref": "#/components/schemas/JsonArrayData"},
      {"$ref": "#/components/schemas/CudaIpcArrayData"}
    ],
    "title": "Data",
    "discriminator": {
      "propertyName": "encoding",
      "mapping": {
        "base64": "#/components/schemas/Base64ArrayData",
        "binref": "#/components/schemas/BinrefArrayData",
        "cuda_ipc": "#/components/schemas/CudaIpcArrayData",
        "json": "#/components/schemas/JsonArrayData"
      }
    }
  }
})json";

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

Value ParseConstant(std::string_view json) {
  auto parsed = ReadJson(json);
  if (!parsed.ok()) std::abort();  // the constants above are valid JSON
  return *std::move(parsed);
}

const Value& FixedSchema(std::string_view name) {
  static const Value kSchemas = [] {
    Value out = ParseConstant(kFixedSchemas);
    for (const ModelDoc& d : kModelDocs) out.as_dict().at(d.model).as_dict().set("description", Value(d.doc));
    return out;
  }();
  return kSchemas.as_dict().at(name);
}

const Dict& ArrayLeafParts() {
  static const Value kParts = ParseConstant(kArrayLeafParts);
  return kParts.as_dict();
}

// ---------------------------------------------------------------------------
// pydantic's JSON schema of the component's models.

Value Ref(std::string_view model) {
  return Dict{{"$ref", Value("#/components/schemas/" + std::string(model))}};
}

// The dtypes in tesseract-core's AllowedDtypes order (the order of its enums).
constexpr std::array<Dtype, 14> kAllowedDtypes = {
    Dtype::kFloat16, Dtype::kFloat32, Dtype::kFloat64,   Dtype::kInt8,      Dtype::kInt16,
    Dtype::kInt32,   Dtype::kInt64,   Dtype::kBool,      Dtype::kUInt8,     Dtype::kUInt16,
    Dtype::kUInt32,  Dtype::kUInt64,  Dtype::kComplex64, Dtype::kComplex128};

// array_encoding._castable: same-kind casts, and any integer to any integer
// (the runtime refuses values that do not fit rather than the dtype).
bool Castable(Dtype from, Dtype to) {
  return CanCastSameKind(from, to) || (IsInteger(from) && IsInteger(to));
}

// pydantic's schema of Literal[...]: "const" for one value, "enum" for more.
Value StringLiteral(const List& values) {
  if (values.size() == 1) return Dict{{"type", "string"}, {"const", values[0]}};
  return Dict{{"type", "string"}, {"enum", values}};
}

// get_array_model's name: EncodedArrayModel__<shape>__<dtype>__<flags>.
std::string ArrayModelName(const SchemaType& type) {
  std::string shape;
  if (type.shape().any_rank()) {
    shape = "anyrank";
  } else if (type.shape().rank() == 0) {
    shape = "scalar";
  } else {
    for (const auto& dim : type.shape().dims()) {
      if (!shape.empty()) shape += '_';
      shape += dim ? std::to_string(*dim) : "any";
    }
  }
  const std::string dtype = type.dtype() ? std::string(DtypeName(*type.dtype())) : "None";
  return "EncodedArrayModel__" + shape + "__" + dtype + "__" +
         (type.differentiable() ? "DIFFERENTIABLE" : "noflags");
}

// The "shape" field of get_array_model: a tuple of the allowed sizes per
// dimension (free: any non-negative int; 1: exactly 1; N: 1 or N, broadcast).
Value ArrayShapeSchema(const ShapeSpec& shape) {
  Dict out;
  if (shape.any_rank()) {
    out.set("items", Dict{{"type", "integer"}});
  } else {
    List dims;
    List example;
    for (const auto& dim : shape.dims()) {
      if (!dim) {
        dims.push_back(Dict{{"type", "integer"}, {"minimum", 0}});
      } else if (*dim == 1) {
        dims.push_back(Dict{{"type", "integer"}, {"const", 1}});
      } else {
        dims.push_back(Dict{{"type", "integer"}, {"enum", List{1, *dim}}});
      }
      example.push_back(dim.value_or(1));
    }
    if (!dims.empty()) out.set("prefixItems", std::move(dims));
    out.set("minItems", shape.rank());
    out.set("maxItems", shape.rank());
    out.set("examples", List{std::move(example)});
  }
  out.set("type", "array");
  out.set("title", "Shape");
  out.set("description", "Shape of the array");
  return out;
}

// pydantic's dict schema (_common_dict_schema): a key pattern becomes
// patternProperties, other key constraints propertyNames; the value schema
// loses its title; an unconstrained value allows anything.
Value DictJson(Value keys, Value values) {
  Dict out{{"type", "object"}};
  Dict& k = keys.as_dict();
  std::optional<Value> pattern;
  if (!k.contains("$ref")) {
    if (const Value* p = k.find("pattern")) pattern = *p;
    k.erase("pattern");
    k.erase("title");
  }
  values.as_dict().erase("title");
  if (pattern) {
    out.set("patternProperties", Dict{{pattern->as_string(), std::move(values)}});
  } else if (!values.as_dict().empty()) {
    out.set("additionalProperties", std::move(values));
  } else {
    out.set("additionalProperties", true);
  }
  const Value* key_type = k.find("type");
  if ((key_type != nullptr && key_type->is_string() && key_type->as_string() == "string" && k.size() > 1) ||
      k.contains("$ref")) {
    k.erase("type");
    out.set("propertyNames", std::move(keys));
  }
  return out;
}

// pydantic titles a field after its name unless its schema is a reference
// to a model (which brings its own title), also through `| None`.
bool TitleFromFieldName(const SchemaType& type) {
  switch (type.kind()) {
    case SchemaType::Kind::kModel:
    case SchemaType::Kind::kShapeDType: return false;
    case SchemaType::Kind::kOptional: return TitleFromFieldName(type.item());
    default: return true;
  }
}

// The default as pydantic shows it; abstract_eval's models show an array
// default as the ShapeDType of the array it validates to
// (create_abstract_eval_schema's replace_array_default_with_shapedtype).
Value DefaultJson(const SchemaType& type, const Value& value) {
  if (type.kind() != SchemaType::Kind::kShapeDType) return value;
  auto array = ValidateValue(SchemaType::Array(type.shape(), type.dtype()), value);
  if (!array.ok()) return value;
  List shape;
  for (const int64_t d : array->as_tensor().shape().dims()) shape.push_back(d);
  return Dict{{"shape", std::move(shape)}, {"dtype", DtypeName(array->as_tensor().dtype())}};
}

// Collects the component schemas while the document refers to them.
struct SchemaBuilder {
  // The component schemas collected so far, by name.
  std::map<std::string, Value> definitions;

  void AddFixed(std::string_view name) { definitions.try_emplace(std::string(name), FixedSchema(name)); }

  // A model's schema, registered as a component (once: a model nested twice is one component).
  Value ModelRef(const ModelSchema& model) {
    if (!definitions.contains(model.name())) {
      definitions.emplace(model.name(), Value());  // taken before recursing into the fields
      Dict properties;
      List required;
      for (const FieldSchema& f : model.fields()) {
        properties.set(f.name, FieldJson(f));
        if (!f.default_value) required.push_back(f.name);
      }
      // No "description": the runtime's renamed copies of the author's models
      // (create_model) have no docstring of their own.
      Dict schema{{"properties", std::move(properties)}};
      if (!required.empty()) schema.set("required", std::move(required));
      schema.set("type", "object");
      schema.set("additionalProperties", false);  // the runtime forbids extra keys
      schema.set("title", model.name());
      definitions[model.name()] = std::move(schema);
    }
    return Ref(model.name());
  }

  // The schema of one field: its type's, with pydantic's field-level keys.
  Value FieldJson(const FieldSchema& field) {
    Value schema = TypeJson(field.type);
    Dict& s = schema.as_dict();
    if (TitleFromFieldName(field.type) && !s.contains("title")) s.set("title", PyTitle(field.name));
    if (!field.description.empty()) s.set("description", field.description);
    if (field.default_value) s.set("default", DefaultJson(field.type, *field.default_value));
    return schema;
  }

  Value TypeJson(const SchemaType& type) {
    switch (type.kind()) {
      case SchemaType::Kind::kArray: return ArrayLeaf(type);
      case SchemaType::Kind::kShapeDType: AddFixed("ShapeDType"); return Ref("ShapeDType");
      case SchemaType::Kind::kInt: return Dict{{"type", "integer"}};
      case SchemaType::Kind::kFloat: return Dict{{"type", "number"}};
      case SchemaType::Kind::kBool: return Dict{{"type", "boolean"}};
      case SchemaType::Kind::kString: return Dict{{"type", "string"}};
      case SchemaType::Kind::kAny: return Dict{};
      case SchemaType::Kind::kList: return Dict{{"type", "array"}, {"items", TypeJson(type.item())}};
      case SchemaType::Kind::kDict: return DictJson(Dict{{"type", "string"}}, TypeJson(type.item()));
      case SchemaType::Kind::kOptional:
        return Dict{{"anyOf", List{TypeJson(type.item()), Dict{{"type", "null"}}}}};
      case SchemaType::Kind::kModel: return ModelRef(*type.model());
    }
    std::abort();  // every kind is handled above
  }

  // An array leaf: the runtime's EncodedArrayModel for its shape and dtype,
  // inlined (not a component) and keeping its model name as title.
  Value ArrayLeaf(const SchemaType& type) {
    for (const char* data :
         {"Base64ArrayData", "BinrefArrayData", "CudaIpcArrayData", "JsonArrayData", "JsonValue"}) {
      AddFixed(data);
    }
    const Dict& parts = ArrayLeafParts();
    List dtypes;
    for (const Dtype d : kAllowedDtypes) {
      if (!type.dtype() || Castable(d, *type.dtype())) dtypes.push_back(DtypeName(d));
    }
    Value dtype = StringLiteral(dtypes);
    dtype.as_dict().set("title", "Dtype");
    dtype.as_dict().set("description", "Data type of the array");
    dtype.as_dict().set("examples", List{type.dtype() ? DtypeName(*type.dtype()) : "float64"});
    Dict properties{{"object_type", parts.at("object_type")},
                    {"shape", ArrayShapeSchema(type.shape())},
                    {"dtype", std::move(dtype)},
                    {"data", parts.at("data")}};
    List flags;
    if (type.differentiable()) flags.push_back("DIFFERENTIABLE");
    return Dict{{"properties", std::move(properties)},
                {"required", List{"shape", "dtype", "data"}},
                {"type", "object"},
                {"additionalProperties", false},
                {"title", ArrayModelName(type)},
                {"array_flags", std::move(flags)}};
  }
};

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

void AddGradientSchemas(const GradientSpec& g, const OpenApiInput& input, SchemaBuilder& b) {
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
    const Value content = JsonContent(Ref(request));
    op.set("requestBody", accept_header ? Dict{{"required", true}, {"content", content}}
                                        : Dict{{"content", content}, {"required", true}});
    responses.set("422", Dict{{"description", "Validation Error"},
                              {"content", JsonContent(Ref("HTTPValidationError"))}});
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
  SchemaBuilder b;
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
                                "ApplyInputSchema", Ref("ApplyOutputSchema"), true));

  for (const GradientSpec& g : kGradients) {
    const std::string endpoint(g.endpoint);
    if (!implements(endpoint)) continue;
    AddGradientSchemas(g, input, b);
    paths.set("/" + endpoint, Operation(endpoint, "post", EndpointDocstring(g.docstring, input, endpoint),
                                        g.request, Ref(g.response), true));
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
                        "AbstractInputSchema", Ref("AbstractOutputSchema"), false));
  }

  if (input.debug) {
    for (const char* name : {"TestSpec", "TestCliConfig", "TestOutputSchema"}) b.AddFixed(name);
    paths.set("/test", Operation("test", "post", kTestDoc, "TestSpec", Ref("TestOutputSchema"), false));
  }
  b.AddFixed("HTTPValidationError");
  b.AddFixed("ValidationError");

  Dict schemas;  // sorted by name, as FastAPI lists them
  for (const auto& [name, schema] : b.definitions) {
    schemas.set(name, DropNullMembers(FastApiSchema(PydanticSort(schema, name))));
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
