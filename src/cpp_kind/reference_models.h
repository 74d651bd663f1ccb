// reference_models.h: the models of tesseract-core's /openapi.json that do
// not depend on the component (array encodings, ShapeDType, validation
// errors, /test), as pydantic renders them, docstrings included.
#pragma once

#include <string_view>

#include "tesscpp/value.h"

namespace tesscpp::cpp_kind {

/// \brief The component schema of a fixed model by name ("Base64ArrayData",
/// "ShapeDType", "HTTPValidationError", "TestSpec", ...). Aborts on an
/// unknown name: callers name models of this file only.
const Value& ReferenceModel(std::string_view name);

/// \brief The members of every array leaf that do not depend on its shape
/// and dtype ("object_type", "data").
const Value::Dict& ArrayLeafParts();

}  // namespace tesscpp::cpp_kind
