// http_status.cc: the table of http_status.h.
#include "core/http_status.h"

namespace tesscpp::core {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kDecodeError: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kNotAcceptable: return 406;
    case StatusCode::kPayloadTooLarge: return 413;
    case StatusCode::kValidationError:
    case StatusCode::kOutOfRange: return 422;
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    case StatusCode::kIoError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

StatusCode StatusCodeForHttp(int http) {
  switch (http) {
    case 404: return StatusCode::kNotFound;
    case 406: return StatusCode::kNotAcceptable;
    case 413: return StatusCode::kPayloadTooLarge;
    case 422: return StatusCode::kValidationError;
    // 503 and 504 stay kInternal: Python callers of tesseract-core's SDK see
    // every 5xx as one error type, and ours match them.
    default: return http >= 500 ? StatusCode::kInternal : StatusCode::kInvalidArgument;
  }
}

}  // namespace tesscpp::core
