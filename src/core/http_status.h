// http_status.h: StatusCode <-> HTTP status, in one place (internal).
//
// The server answers a Status that reaches the wire with HttpStatusFor (most
// answers follow tesseract-core's routes instead: 422 for validation, 500 for
// an endpoint's failure, whatever their code); the client reads an answer
// that is not 2xx back with StatusCodeForHttp.
#pragma once

#include "tesscpp/status.h"

namespace tesscpp::core {

/// \brief The HTTP status that answers a failure of `code` (200 for kOk).
int HttpStatusFor(StatusCode code);

/// \brief The code a client gives an answer of HTTP status `http` (>= 400):
/// the inverse of HttpStatusFor where the peer's statuses mean the same, and
/// kInternal / kInvalidArgument for other 5xx / 4xx answers.
StatusCode StatusCodeForHttp(int http);

}  // namespace tesscpp::core
