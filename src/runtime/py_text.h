// py_text.h: Python's spellings of values inside messages the reference
// runtime produces (repr of strings and sets, tuple shapes), so our 406 and
// 422 texts read the same.
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

}  // namespace tesscpp::runtime
