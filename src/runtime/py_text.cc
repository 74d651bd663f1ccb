#include "runtime/py_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "codec/number_format.h"

namespace tesscpp::runtime {
namespace {

// str.expandtabs(): tab stops every 8 columns, counted in characters.
std::string ExpandTabs(std::string_view s) {
  std::string out;
  size_t column = 0;
  for (const char c : s) {
    if (c == '\t') {
      const size_t spaces = 8 - column % 8;
      out.append(spaces, ' ');
      column += spaces;
      continue;
    }
    out += c;
    if (c == '\n' || c == '\r') {
      column = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {  // not a UTF-8 continuation byte
      ++column;
    }
  }
  return out;
}

// The code points of UTF-8 `s`, an invalid byte read as U+FFFD (Python
// strings hold code points; a C++ author's bytes may not be valid UTF-8).
std::vector<char32_t> CodePoints(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
    char32_t cp = extra == 0 ? b : extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
    bool valid = extra >= 0 && i + static_cast<size_t>(extra) < s.size() + (extra == 0 ? 1 : 0);
    for (int k = 1; valid && k <= extra; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      valid = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!valid) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

// json's encoder for a string with ensure_ascii.
void AppendJsonString(std::string_view s, std::string& out) {
  char buf[16];
  out += '"';
  for (const char32_t cp : CodePoints(s)) {
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {  // a surrogate pair, as Python writes astral characters
      const char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out += buf;
    }
  }
  out += '"';
}

void AppendJson(const Value& v, int indent, int depth, std::string& out) {
  const std::string inner = "\n" + std::string(static_cast<size_t>(indent * (depth + 1)), ' ');
  const std::string outer = "\n" + std::string(static_cast<size_t>(indent * depth), ' ');
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt:
      out += v.is_big_uint() ? std::to_string(v.as_uint()) : std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      const double d = v.as_number();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        codec::AppendPythonFloat(d, out);
      }
      return;
    }
    case Value::Kind::kString: AppendJsonString(v.as_string(), out); return;
    case Value::Kind::kList: {
      if (v.as_list().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.as_list().size(); ++i) {
        out += i == 0 ? inner : "," + inner;
        AppendJson(v.as_list()[i], indent, depth + 1, out);
      }
      out += outer + "]";
      return;
    }
    case Value::Kind::kDict: {
      if (v.as_dict().empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.as_dict()) {
        out += first ? inner : "," + inner;
        first = false;
        AppendJsonString(key, out);
        out += ": ";
        AppendJson(item, indent, depth + 1, out);
      }
      out += outer + "}";
      return;
    }
    case Value::Kind::kTensor: out += "\"<array>\""; return;
  }
}

// repr(v): what str() of a container shows for each item.
std::string PyReprOf(const Value& v) { return v.is_string() ? PyRepr(v.as_string()) : PyStr(v); }

}  // namespace

std::string_view PyStrip(std::string_view s) {
  while (!s.empty() && IsPySpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsPySpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string PyRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;  // UTF-8 passes through as Python prints printable characters
    }
  }
  out += quote;
  return out;
}

std::string PySetRepr(const std::vector<std::string>& items) {
  if (items.empty()) return "set()";
  std::vector<std::string> sorted = items;
  std::sort(sorted.begin(), sorted.end());
  std::string out = "{";
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0) out += ", ";
    out += PyRepr(sorted[i]);
  }
  return out + "}";
}

std::string PyTitle(std::string_view name) {
  std::string out;
  bool after_letter = false;
  for (const char c : name) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) {
      out += after_letter ? static_cast<char>(c | 0x20) : static_cast<char>(c & ~0x20);
    } else {
      out += c == '_' ? ' ' : c;
    }
    after_letter = letter;
  }
  return std::string(PyStrip(out));
}

// the other non-blank lines removed, empty lines dropped at both ends.
std::string PyCleanDoc(std::string_view doc) {
  const std::string expanded = ExpandTabs(doc);
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    const size_t end = expanded.find('\n', start);
    lines.push_back(expanded.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  size_t margin = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t indent = std::find_if_not(lines[i].begin(), lines[i].end(), IsPySpace) - lines[i].begin();
    if (indent < lines[i].size()) margin = std::min(margin, indent);
  }
  lines[0].erase(0, std::find_if_not(lines[0].begin(), lines[0].end(), IsPySpace) - lines[0].begin());
  if (margin != std::string::npos) {
    for (size_t i = 1; i < lines.size(); ++i) lines[i].erase(0, margin);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t first = 0;
  while (first < lines.size() && lines[first].empty()) ++first;
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) {
    if (i > first) out += '\n';
    out += lines[i];
  }
  return out;
}

std::string PyStr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return v.is_big_uint() ? std::to_string(v.as_uint()) : std::to_string(v.as_int());
    case Value::Kind::kFloat: {
      std::string out;
      codec::AppendPythonFloat(v.as_number(), out);
      return out;
    }
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.as_list().size(); ++i) out += (i > 0 ? ", " : "") + PyReprOf(v.as_list()[i]);
      return out + "]";
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : v.as_dict()) {
        out += (first ? "" : ", ") + PyRepr(key) + ": " + PyReprOf(item);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::kTensor: return "<array>";
  }
  return "";
}

std::string PyJsonDumps(const Value& v, int indent) {
  std::string out;
  AppendJson(v, indent, 0, out);
  return out;
}

}  // namespace tesscpp::runtime
