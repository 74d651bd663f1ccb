// http_headers.h: HTTP header lists as the server, the Runtime and the client
// carry them (internal).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tesscpp::platform {

/// \brief (name, value) pairs in the order received or to be sent.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// \brief Whether two header names (or other ASCII tokens) are equal,
/// ignoring case (RFC 9110 5.1).
bool SameHeaderName(std::string_view a, std::string_view b);

/// \brief The value of the first header named `name`, compared
/// case-insensitively (RFC 9110 5.1), if any.
std::optional<std::string_view> FindHeader(const HttpHeaders& headers, std::string_view name);

}  // namespace tesscpp::platform
