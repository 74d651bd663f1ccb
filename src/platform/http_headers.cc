// http_headers.cc: header lookup.
#include "platform/http_headers.h"

#include <strings.h>

namespace tesscpp::platform {

std::optional<std::string_view> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), name.size()) == 0) return value;
  }
  return std::nullopt;
}

}  // namespace tesscpp::platform
