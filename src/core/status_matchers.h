// status_matchers.h: GoogleTest assertions on Status and Result (tests only).
//
//   ASSERT_OK(ReadJson(text));                  // Status or Result; prints the status
//   EXPECT_STATUS(Shape::Make({-1}), StatusCode::kInvalidArgument);
//   ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(Dtype::kFloat32, shape));
//
// Each evaluates its expression once, and more text can be streamed in
// (`ASSERT_OK(s) << "while reading " << name;`).
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "tesscpp/result.h"
#include "tesscpp/status.h"

namespace tesscpp::testing {

inline Status StatusOf(const Status& status) { return status; }
template <typename T>
Status StatusOf(const Result<T>& result) {
  return result.status();
}

template <typename S>
::testing::AssertionResult IsOk(const char* text, const S& status_or_result) {
  const Status status = StatusOf(status_or_result);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text << " is not OK: " << status;
}

template <typename S>
::testing::AssertionResult HasCode(const char* text, const char*, const S& status_or_result,
                                   StatusCode code) {
  const Status status = StatusOf(status_or_result);
  if (status.code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << text << " is " << (status.ok() ? "OK" : status.ToString()) << ", not " << StatusCodeName(code);
}

}  // namespace tesscpp::testing

#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::tesscpp::testing::IsOk, expr)
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::tesscpp::testing::IsOk, expr)
#define EXPECT_STATUS(expr, code) EXPECT_PRED_FORMAT2(::tesscpp::testing::HasCode, expr, code)
#define ASSERT_STATUS(expr, code) ASSERT_PRED_FORMAT2(::tesscpp::testing::HasCode, expr, code)
// lhs may be a declaration ("auto x"), which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  TESS_ASSERT_OK_AND_ASSIGN_IMPL(TESS_CONCAT(tess_assert_result_, __LINE__), lhs, rexpr)
#define TESS_ASSERT_OK_AND_ASSIGN_IMPL(result_name, lhs, rexpr) \
  auto result_name = (rexpr);                                   \
  ASSERT_OK(result_name);                                       \
  lhs = *std::move(result_name)
// NOLINTEND(bugprone-macro-parentheses)
