// python_exception.cc: the table of python_exception.h.
#include "tesscpp/internal/core/python_exception.h"

namespace tesscpp::core {

const char* PythonExceptionName(StatusCode code, PythonContext context) {
  struct Row {
    StatusCode code;
    const char* call;
    const char* test_endpoint;
    const char* transport_check;
  };
  // One row per code; kServerAnswer is RuntimeError throughout.
  static constexpr Row kTable[] = {
      {StatusCode::kOk, "RuntimeError", "RuntimeError", "RuntimeError"},
      {StatusCode::kInvalidArgument, "ValueError", "ValueError", "ValueError"},
      {StatusCode::kDecodeError, "RuntimeError", "ValueError", "RuntimeError"},
      {StatusCode::kValidationError, "RuntimeError", "ValueError", "ValueError"},
      {StatusCode::kNotFound, "RuntimeError", "KeyError", "RuntimeError"},
      {StatusCode::kOutOfRange, "RuntimeError", "ValueError", "RuntimeError"},
      {StatusCode::kUnimplemented, "NotImplementedError", "NotImplementedError", "RuntimeError"},
      {StatusCode::kNotAcceptable, "RuntimeError", "RuntimeError", "RuntimeError"},
      {StatusCode::kPayloadTooLarge, "RuntimeError", "RuntimeError", "RuntimeError"},
      {StatusCode::kIoError, "RuntimeError", "OSError", "RuntimeError"},
      {StatusCode::kResourceExhausted, "RuntimeError", "MemoryError", "RuntimeError"},
      {StatusCode::kDeadlineExceeded, "TimeoutError", "TimeoutError", "RuntimeError"},
      {StatusCode::kUnavailable, "ConnectionError", "RuntimeError", "RuntimeError"},
      {StatusCode::kInternal, "RuntimeError", "RuntimeError", "RuntimeError"},
  };
  if (context == PythonContext::kServerAnswer) return "RuntimeError";
  for (const Row& row : kTable) {
    if (row.code != code) continue;
    switch (context) {
      case PythonContext::kCall: return row.call;
      case PythonContext::kTestEndpoint: return row.test_endpoint;
      case PythonContext::kTransportCheck: return row.transport_check;
      case PythonContext::kServerAnswer: break;
    }
  }
  return "RuntimeError";
}

}  // namespace tesscpp::core
