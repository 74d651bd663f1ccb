// The StatusCode tables, pinned: a change to any row is a change callers see.
#include <gtest/gtest.h>

#include <string>

#include "core/http_status.h"
#include "tesscpp/internal/core/python_exception.h"

namespace tesscpp::core {
namespace {

constexpr StatusCode kEveryCode[] = {
    StatusCode::kOk,
    StatusCode::kInvalidArgument,
    StatusCode::kDecodeError,
    StatusCode::kValidationError,
    StatusCode::kNotFound,
    StatusCode::kOutOfRange,
    StatusCode::kUnimplemented,
    StatusCode::kNotAcceptable,
    StatusCode::kPayloadTooLarge,
    StatusCode::kIoError,
    StatusCode::kResourceExhausted,
    StatusCode::kDeadlineExceeded,
    StatusCode::kUnavailable,
    StatusCode::kInternal,
};

TEST(ErrorTables, HttpStatusOfEveryCode) {
  const int expected[] = {200, 400, 400, 422, 404, 422, 501, 406, 413, 500, 503, 504, 503, 500};
  static_assert(std::size(expected) == std::size(kEveryCode));
  for (size_t i = 0; i < std::size(kEveryCode); ++i) {
    EXPECT_EQ(HttpStatusFor(kEveryCode[i]), expected[i]) << StatusCodeName(kEveryCode[i]);
  }
}

TEST(ErrorTables, ClientReadsAnswersBack) {
  // The inverse where the statuses mean the same thing on both sides.
  for (StatusCode code : {StatusCode::kNotFound, StatusCode::kNotAcceptable, StatusCode::kPayloadTooLarge,
                          StatusCode::kValidationError, StatusCode::kInvalidArgument}) {
    EXPECT_EQ(StatusCodeForHttp(HttpStatusFor(code)), code) << StatusCodeName(code);
  }
  EXPECT_EQ(StatusCodeForHttp(401), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttp(503), StatusCode::kInternal);
  EXPECT_EQ(StatusCodeForHttp(500), StatusCode::kInternal);
}

TEST(ErrorTables, PythonExceptionOfEveryCodeInEveryContext) {
  // Columns: kCall, kTestEndpoint, kTransportCheck (kServerAnswer: RuntimeError).
  const char* expected[][3] = {
      {"RuntimeError", "RuntimeError", "RuntimeError"},
      {"ValueError", "ValueError", "ValueError"},
      {"RuntimeError", "ValueError", "RuntimeError"},
      {"RuntimeError", "ValueError", "ValueError"},
      {"RuntimeError", "KeyError", "RuntimeError"},
      {"RuntimeError", "ValueError", "RuntimeError"},
      {"NotImplementedError", "NotImplementedError", "RuntimeError"},
      {"RuntimeError", "RuntimeError", "RuntimeError"},
      {"RuntimeError", "RuntimeError", "RuntimeError"},
      {"RuntimeError", "OSError", "RuntimeError"},
      {"RuntimeError", "MemoryError", "RuntimeError"},
      {"TimeoutError", "TimeoutError", "RuntimeError"},
      {"ConnectionError", "RuntimeError", "RuntimeError"},
      {"RuntimeError", "RuntimeError", "RuntimeError"},
  };
  static_assert(std::size(expected) == std::size(kEveryCode));
  for (size_t i = 0; i < std::size(kEveryCode); ++i) {
    const StatusCode code = kEveryCode[i];
    EXPECT_STREQ(PythonExceptionName(code, PythonContext::kCall), expected[i][0]) << StatusCodeName(code);
    EXPECT_STREQ(PythonExceptionName(code, PythonContext::kTestEndpoint), expected[i][1])
        << StatusCodeName(code);
    EXPECT_STREQ(PythonExceptionName(code, PythonContext::kTransportCheck), expected[i][2])
        << StatusCodeName(code);
    EXPECT_STREQ(PythonExceptionName(code, PythonContext::kServerAnswer), "RuntimeError")
        << StatusCodeName(code);
  }
}

}  // namespace
}  // namespace tesscpp::core
