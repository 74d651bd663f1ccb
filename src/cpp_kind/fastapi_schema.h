// fastapi_schema.h: what FastAPI does to pydantic's JSON schemas and to a
// route's docstring on the way into tesseract-core's /openapi.json. Clients
// diff the documents, so key order and number types follow the reference.
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/value.h"

namespace tesscpp::cpp_kind {

/// \brief A component schema as it appears under components.schemas: keys in
/// pydantic's sort order, then re-validated through FastAPI's Schema model
/// (its fields in declaration order, extra keys after), null members dropped.
Value FastApiComponentSchema(const Value& schema, std::string_view name);

/// \brief FastAPI's operation description: the cleaned docstring up to a form feed, stripped.
std::string RouteDescription(std::string_view docstring);

}  // namespace tesscpp::cpp_kind
