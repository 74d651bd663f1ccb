// The matchers fail where they must, and say why.
#include "core/status_matchers.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace tesscpp {
namespace {

Result<int> Seven() { return 7; }
Result<int> Broken() { return Status::NotFound("no seven"); }

TEST(StatusMatchers, PassOnOkAndNameTheStatusOtherwise) {
  EXPECT_OK(Status::OK());
  EXPECT_OK(Seven());
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Broken()), "Broken() is not OK: not_found: no seven");
  EXPECT_STATUS(Broken(), StatusCode::kNotFound);
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS(Seven(), StatusCode::kNotFound), "Seven() is OK, not not_found");
}

TEST(StatusMatchers, AssignOrStop) {
  ASSERT_OK_AND_ASSIGN(const int seven, Seven());
  EXPECT_EQ(seven, 7);
  EXPECT_FATAL_FAILURE(
      [] {
        ASSERT_OK_AND_ASSIGN(const int never, Broken());
        (void)never;
      }(),
      "not OK");
}

}  // namespace
}  // namespace tesscpp
