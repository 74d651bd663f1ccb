#include "runtime/py_text.h"

#include <algorithm>
#include <cstdio>

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

}  // namespace tesscpp::runtime
