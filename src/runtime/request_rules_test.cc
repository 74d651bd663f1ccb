#include "runtime/request_rules.h"

#include <gtest/gtest.h>

namespace tesscpp::runtime {
namespace {

TEST(RequestRules, QueryValuesDecodeAsStarletteDecodesThem) {
  EXPECT_EQ(UrlDecode("a+b%2Fc%zz%4"), "a b/c%zz%4");               // malformed escapes stay as they are
  EXPECT_EQ(QueryParam("run_id=x&run_id=y%20z", "run_id"), "y z");  // the last one wins
  EXPECT_EQ(QueryParam("ready", "ready"), "");
  EXPECT_EQ(QueryParam("a=1&b=2", "c"), std::nullopt);
  EXPECT_EQ(QueryParam("", "c"), std::nullopt);
}

TEST(RequestRules, JsonBodiesAreThoseFastApiParses) {
  EXPECT_TRUE(IsJsonContentType("application/json"));
  EXPECT_TRUE(IsJsonContentType(" Application/JSON ; charset=utf-8"));
  EXPECT_TRUE(IsJsonContentType("application/vnd.api+json"));
  EXPECT_FALSE(IsJsonContentType(std::nullopt));
  EXPECT_FALSE(IsJsonContentType("text/json"));
  EXPECT_FALSE(IsJsonContentType("application/+json"));
  EXPECT_FALSE(IsJsonContentType("application/jsonx"));
}

}  // namespace
}  // namespace tesscpp::runtime
