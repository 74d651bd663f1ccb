#include "tesscpp/shape.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>

namespace tesscpp {
namespace {

TEST(Shape, ScalarHasOneElement) {
  Shape s;
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.ToString(), "()");
}

TEST(Shape, CountsAndPrintsLikeNumpy) {
  EXPECT_EQ(Shape::Make({3})->ToString(), "(3,)");
  EXPECT_EQ(Shape::Make({2, 3})->ToString(), "(2, 3)");
  EXPECT_EQ(Shape::Make({2, 3, 4})->num_elements(), 24);
  EXPECT_EQ(Shape::Make({2, 0, 4})->num_elements(), 0);
}

TEST(Shape, RejectsNegativeDims) {
  auto r = Shape::Make({2, -1});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kValidationError);
  EXPECT_NE(r.status().message().find("-1"), std::string::npos);
}

TEST(Shape, RejectsOverflowUnlessEmpty) {
  EXPECT_EQ(Shape::Make({int64_t{1} << 40, int64_t{1} << 40}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Shape::Make({(int64_t{1} << 59) - 1}).value().num_elements(), (int64_t{1} << 59) - 1);
  // 2^59 complex128 elements would be 2^63 bytes, one past int64.
  EXPECT_FALSE(Shape::Make({int64_t{1} << 59}).ok());
  EXPECT_FALSE(Shape::Make({int64_t{1} << 58, 2}).ok());
  // A zero dimension makes any other dimension harmless.
  EXPECT_EQ(Shape::Make({int64_t{1} << 62, 0, int64_t{1} << 62})->num_elements(), 0);
}

}  // namespace
}  // namespace tesscpp
