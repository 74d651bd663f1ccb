// http_head.h: the server's decisions about HTTP heads that need no socket:
// which request headers are the server's own business, the bearer-token
// check, and the text of a response head. server.cc calls these; keeping
// them here lets unit tests pin them without Beast or a connection.
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::http {

/// \brief True for the headers the server handles itself (framing,
/// connection, authorization, Accept and Content-Type, which travel in their
/// own RuntimeRequest fields); every other header is passed on to the
/// Runtime's extensions in RuntimeRequest::headers. Case-insensitive.
bool IsServerHeader(std::string_view name);

/// \brief True when `authorization` (the header's value) is "Bearer <token>"
/// with exactly `token` (the scheme is case-insensitive, as RFC 7235 says).
/// Every byte is compared whatever the first difference, so the answer's
/// timing tells nothing about the token; hand-written, as one comparison
/// does not justify linking a crypto library for CRYPTO_memcmp.
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

/// \brief Replaces `out` with the head of `response`: status line with
/// `reason`, content-type, content-length (the body's size, also for HEAD),
/// the response's own headers, "connection: close" unless `keep_alive`, and
/// the blank line. `out` keeps its capacity between responses.
void WriteResponseHead(const RuntimeResponse& response, std::string_view reason, bool keep_alive,
                       std::string& out);

}  // namespace tesscpp::http
