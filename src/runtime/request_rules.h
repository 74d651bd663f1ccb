// request_rules.h: how the runtime reads a request's query string and
// Content-Type, with the rules of the Python stack it answers like
// (Starlette's query parsing, FastAPI's choice of bodies it parses as JSON).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tesscpp::runtime {

/// \brief application/x-www-form-urlencoded decoding, as Starlette reads
/// query values ('+' is a space, %XX a byte; a malformed escape stays as it is).
std::string UrlDecode(std::string_view s);
/// \brief The value of `name` in `query` (the last one wins; "" for a name
/// without '='), or nullopt when absent.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name);
/// \brief Whether FastAPI parses a body of this type as JSON:
/// application/json and application/<anything>+json (any case, parameters
/// ignored); a request without Content-Type is not parsed.
bool IsJsonContentType(const std::optional<std::string>& content_type);

}  // namespace tesscpp::runtime
