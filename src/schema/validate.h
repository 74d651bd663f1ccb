// validate.h: checking and coercing Values against schemas, as pydantic does.
//
// The rules are those a FastAPI/pydantic Tesseract applies to a request body
// (lax mode): ints accept integral floats and numeric strings, bools accept
// "yes"/"off"/0/1, arrays accept arraydicts (decoded to Tensors by the JSON
// reader) as well as plain numbers and nested lists, size-1 dimensions broadcast
// to fixed sizes, and dtypes are cast when NumPy's same-kind rule allows it,
// refusing casts that would lose values. Every problem becomes a ValidationIssue
// located relative to the validated root.
#pragma once

#include <vector>

#include <string>
#include "tesscpp/result.h"

#include "tesscpp/schema.h"
#include "tesscpp/validation_issue.h"
#include "tesscpp/value.h"

namespace tesscpp {
class BufferPool;
}  // namespace tesscpp

namespace tesscpp::schema {

struct ValidateOptions {
  /// Where converted and cast arrays are allocated (the default pool if null).
  BufferPool* pool = nullptr;
  /// The directories InputPath and OutputPath values are resolved against
  /// (TESSERACT_INPUT_PATH, TESSERACT_OUTPUT_PATH; empty: the working directory).
  std::string input_path;
  std::string output_path;
  /// OutputPath values come out relative to output_path, as they are
  /// answered (an endpoint's outputs); otherwise absolute.
  bool relative_output_paths = false;
};

/// \brief Validates `input` against `model`. On success the result is a dict
/// with every field in declaration order: defaults filled in, scalars coerced,
/// arrays as Tensors of the schema's rank and dtype. On failure,
/// kValidationError with a ValidationDetail listing every issue found.
Result<Value> ValidateModel(const ModelSchema& model, const Value& input,
                            const ValidateOptions& options = {});

/// \brief Validates one value of `type` (same rules and result shape).
Result<Value> ValidateValue(const SchemaType& type, const Value& input, const ValidateOptions& options = {});

}  // namespace tesscpp::schema
