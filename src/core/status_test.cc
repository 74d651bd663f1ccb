#include "tesscpp/status.h"

#include <gtest/gtest.h>

#include "core/status_matchers.h"
#include "tesscpp/result.h"

namespace tesscpp {
namespace {

TEST(Status, OkHasNoMessage) {
  Status s;
  EXPECT_OK(s);
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, FactoriesStreamArguments) {
  Status s = Status::InvalidArgument("n must be >= ", 0, ", got ", -3);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "n must be >= 0, got -3");
  EXPECT_EQ(s.ToString(), "invalid_argument: n must be >= 0, got -3");
}

TEST(Status, WithContextPrefixes) {
  EXPECT_EQ(Status::DecodeError("bad").WithContext("inputs.a").message(), "inputs.a: bad");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
}

class NoteDetail : public StatusDetail {
 public:
  std::string_view type_id() const override { return "note"; }
  std::string ToString() const override { return "a note"; }
};

TEST(Status, CarriesADetailThroughContext) {
  auto detail = std::make_shared<NoteDetail>();
  Status s = Status::ValidationError("bad").WithDetail(detail).WithContext("inputs");
  ASSERT_NE(s.detail(), nullptr);
  EXPECT_EQ(s.detail()->type_id(), "note");
  EXPECT_EQ(s.message(), "inputs: bad");
  EXPECT_EQ(Status::OK().WithDetail(detail).detail(), nullptr);
}

TEST(Status, ConstructingWithOkCodeIsOk) { EXPECT_TRUE(Status(StatusCode::kOk, "ignored").ok()); }

Result<int> Half(int n) {
  if (n % 2 != 0) return Status::InvalidArgument(n, " is odd");
  return n / 2;
}

Status Quarter(int n, int* out) {
  TESS_ASSIGN_OR_RETURN(int half, Half(n));
  TESS_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::OK();
}

Status FailsThrough() {
  TESS_RETURN_IF_ERROR(Status::NotFound("missing"));
  return Status::Internal("not reached");
}

TEST(Result, ValueAndError) {
  Result<int> ok = Half(8);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, 4);
  Result<int> bad = Half(3);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "3 is odd");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Result, Macros) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_EQ(Quarter(6, &out).message(), "3 is odd");
  EXPECT_EQ(FailsThrough().code(), StatusCode::kNotFound);
}

TEST(Result, OkStatusBecomesInternalError) {
  Result<int> r{Status::OK()};
  EXPECT_STATUS(r, StatusCode::kInternal);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> bad = Half(3);
  EXPECT_DEATH((void)bad.value(), "3 is odd");
}

}  // namespace
}  // namespace tesscpp
