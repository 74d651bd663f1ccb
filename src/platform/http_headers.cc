// http_headers.cc: header names and lookup.
#include "platform/http_headers.h"

#include <strings.h>

namespace tesscpp::platform {

bool SameHeaderName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string_view> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (SameHeaderName(key, name)) return value;
  }
  return std::nullopt;
}

}  // namespace tesscpp::platform
