#include "runtime/request_rules.h"

#include <algorithm>
#include <cctype>

namespace tesscpp::runtime {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::string> QueryParam(std::string_view query, std::string_view name) {
  std::optional<std::string> found;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (UrlDecode(pair.substr(0, eq)) == name) {
      found = eq == std::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1));  // the last one wins
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return found;
}

bool IsJsonContentType(const std::optional<std::string>& content_type) {
  if (!content_type) return false;
  std::string type = content_type->substr(0, content_type->find(';'));
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  type.erase(0, type.find_first_not_of(" \t"));
  type.erase(type.find_last_not_of(" \t") + 1);
  if (type.rfind("application/", 0) != 0) return false;
  const std::string subtype = type.substr(12);
  return subtype == "json" || (subtype.size() > 5 && subtype.compare(subtype.size() - 5, 5, "+json") == 0);
}

}  // namespace tesscpp::runtime
