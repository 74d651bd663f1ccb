// access_log.h: the server's access log, one line of JSON per request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tesscpp::http {

/// \brief Writes one request's line to `fd` with one write(2), so lines of
/// concurrent requests and workers never interleave.
void LogAccess(int fd, std::string_view method, std::string_view target, int status, double seconds,
               int64_t bytes_in, int64_t bytes_out, const std::string& remote);

}  // namespace tesscpp::http
