// response_errors.h: the error a non-2xx answer from a Tesseract becomes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "client/http_connection.h"
#include "tesscpp/client.h"

namespace tesscpp::client {

/// \brief A 422 with a detail list: kValidationError with a ValidationDetail
/// and pydantic's printed form; a 406: kNotAcceptable naming the offered
/// formats, transports and compressions; anything else: "Error <status> from
/// Tesseract: <body>" with an HttpErrorDetail. Any body is safe here (a
/// malformed detail falls back to the generic error); fuzz_client_response
/// checks that.
Status ErrorFromResponse(const HttpResponse& response, std::string_view endpoint,
                         const std::optional<std::string>& accept);

}  // namespace tesscpp::client
