// json_error.h: where a request body stops being JSON, located and named as
// Python's json module does, because FastAPI's 422 for an unparsable body
// carries that position (in characters) and message. Only used once our own
// parser has refused a body, so speed does not matter here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tesscpp::runtime {

struct JsonSyntaxError {
  int64_t position = 0;  ///< in characters (code points), as Python counts
  std::string message;   ///< e.g. "Expecting ',' delimiter"
};

/// \brief True when `text` is valid UTF-8 (Starlette answers 400 otherwise).
bool IsValidUtf8(std::string_view text);

/// \brief `text` with each byte that starts no UTF-8 sequence replaced by
/// U+FFFD, as Python's errors="replace" decodes it: for quoting a body in a
/// JSON answer.
std::string ReplaceInvalidUtf8(std::string_view text);

/// \brief The first syntax error of `text` as Python's json.loads reports
/// it, or nullopt when Python would parse it (NaN, Infinity, huge numbers and
/// deep nesting are accepted there but not here).
std::optional<JsonSyntaxError> LocateJsonError(std::string_view text);

}  // namespace tesscpp::runtime
