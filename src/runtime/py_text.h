// py_text.h: Python's text functions as the reference runtime applies them:
// repr of strings and sets inside its 406 and 422 messages, and the title and
// docstring cleaning that shape /openapi.json, so our texts read the same.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tesscpp::runtime {

/// \brief str.isspace for the ASCII characters (docstrings, identifiers, headers).
inline bool IsPySpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

/// \brief str.strip(): `s` without surrounding whitespace.
std::string_view PyStrip(std::string_view s);

/// \brief repr(s): single quotes unless s holds ' and no ", escapes as Python.
std::string PyRepr(std::string_view s);

/// \brief repr(set(items)) for strings: "{'a', 'b'}" (sorted; Python's order
/// is hash order, which no client can rely on), "set()" when empty.
std::string PySetRepr(const std::vector<std::string>& items);

/// \brief name.title().replace("_", " ").strip(): pydantic's title for a
/// field ("n_points" -> "N Points") and FastAPI's summary for a route.
std::string PyTitle(std::string_view name);

/// \brief inspect.cleandoc(doc), tabs expanded first as Python does.
std::string PyCleanDoc(std::string_view doc);

}  // namespace tesscpp::runtime
