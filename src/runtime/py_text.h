// py_text.h: Python's text functions as the reference runtime applies them:
// repr of strings and sets inside its 406 and 422 messages, the title and
// docstring cleaning that shape /openapi.json, and str() and json.dump() of
// the values a run logs, so our texts read the same.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/value.h"

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

/// \brief str(v) of the Python value `v` stands for: "1.5", "True", "None",
/// "[1, 'a']", "{'k': 2}" (what MLflow records as a parameter's value).
/// Tensors are written as "<array>": callers refuse them first.
std::string PyStr(const Value& v);

/// \brief json.dumps(v, indent=indent) with Python's defaults: ensure_ascii
/// (\uXXXX escapes), floats as repr, NaN / Infinity / -Infinity,
/// ", " / ": " separators and one item per line.
std::string PyJsonDumps(const Value& v, int indent);

}  // namespace tesscpp::runtime
