#include "http/http_head.h"

#include <algorithm>
#include <array>

#include "platform/http_headers.h"

namespace tesscpp::http {

bool IsServerHeader(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kOwn = {
      "accept", "content-type",  "content-length", "transfer-encoding", "connection",
      "host",   "authorization", "user-agent",     "accept-encoding",   "expect"};
  return std::any_of(kOwn.begin(), kOwn.end(),
                     [&](std::string_view own) { return platform::SameHeaderName(name, own); });
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() < kScheme.size() ||
      !platform::SameHeaderName(authorization.substr(0, kScheme.size()), kScheme))
    return false;
  const std::string_view given = authorization.substr(kScheme.size());
  unsigned char differ = given.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i) {
    differ |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
  }
  return differ == 0;
}

void WriteResponseHead(const RuntimeResponse& response, std::string_view reason, bool keep_alive,
                       std::string& out) {
  out = "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += reason;
  out += "\r\ncontent-type: ";
  out += response.content_type;
  out += "\r\ncontent-length: ";
  out += std::to_string(response.body.size());
  out += "\r\n";
  for (const auto& [name, value] : response.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!keep_alive) out += "connection: close\r\n";
  out += "\r\n";
}

}  // namespace tesscpp::http
