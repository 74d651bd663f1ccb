#include "cpp_kind/reference_models.h"

#include <cstdlib>
#include <string_view>

#include "tesscpp/internal/codec/json.h"

namespace tesscpp::cpp_kind {
namespace {

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

Value ParseConstant(std::string_view json) {
  auto parsed = ReadJson(json);
  if (!parsed.ok()) std::abort();  // the constants above are valid JSON
  return *std::move(parsed);
}

}  // namespace

const Value& ReferenceModel(std::string_view name) {
  static const Value kSchemas = [] {
    Value out = ParseConstant(kFixedSchemas);
    for (const ModelDoc& d : kModelDocs) out.as_dict().at(d.model).as_dict().set("description", Value(d.doc));
    return out;
  }();
  return kSchemas.as_dict().at(name);
}

const Value::Dict& ArrayLeafParts() {
  static const Value kParts = ParseConstant(kArrayLeafParts);
  return kParts.as_dict();
}

}  // namespace tesscpp::cpp_kind
