// PLACEHOLDER (being written this session): see openapi.h.
#include "runtime/openapi.h"

namespace tesscpp::runtime {
Value BuildOpenApiDocument(const OpenApiInput& input) {
  Value::Dict info{{"title", Value(input.title)}, {"version", Value(input.version)}};
  return Value::Dict{{"openapi", Value("3.1.0")}, {"info", Value(std::move(info))}};
}
}  // namespace tesscpp::runtime
