#include "tesscpp/value.h"

#include <gtest/gtest.h>

namespace tesscpp {
namespace {

TEST(Value, Kinds) {
  EXPECT_TRUE(Value().is_null());
  EXPECT_TRUE(Value(nullptr).is_null());
  EXPECT_TRUE(Value(true).is_bool());
  EXPECT_TRUE(Value(3).is_int());
  EXPECT_TRUE(Value(3u).is_int());
  EXPECT_TRUE(Value(2.5).is_float());
  EXPECT_TRUE(Value("s").is_string());  // not bool, despite const char* -> bool
  EXPECT_TRUE(Value(Value::List{1, 2}).is_list());
  EXPECT_TRUE(Value(Value::Dict{{"a", 1}}).is_dict());
  EXPECT_TRUE(Value(*Tensor::Allocate(Dtype::kBool, Shape())).is_tensor());
}

TEST(Value, IntegersKeepTheirRange) {
  Value big(uint64_t{18446744073709551615u});
  EXPECT_TRUE(big.is_int());
  EXPECT_TRUE(big.is_big_uint());
  EXPECT_EQ(big.as_uint(), 18446744073709551615u);
  Value small(uint64_t{7});
  EXPECT_FALSE(small.is_big_uint());
  EXPECT_EQ(small.as_int(), 7);
  EXPECT_EQ(Value(int64_t{-5}).as_number(), -5.0);
  EXPECT_EQ(Value(int64_t{7}), small);  // same int whatever the C++ type
}

TEST(Value, DictKeepsInsertionOrder) {
  Value::Dict d;
  d.set("z", 1);
  d.set("a", 2);
  d.set("m", 3);
  d.set("a", 20);  // replaces in place
  std::vector<std::string> keys;
  for (const auto& [k, v] : d) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(d.at("a").as_int(), 20);
  EXPECT_EQ(d.find("q"), nullptr);
  EXPECT_TRUE(d.erase("z"));
  EXPECT_FALSE(d.erase("z"));
  EXPECT_EQ(d.size(), 2u);
}

TEST(Value, LargeDictsStayIndexed) {
  // 200k keys: a linear scan per insert would take minutes (and hit the CTest
  // timeout); the index keeps it linear overall.
  Value::Dict d;
  for (int i = 0; i < 200000; ++i) d.set("key" + std::to_string(i), i);
  EXPECT_EQ(d.size(), 200000u);
  EXPECT_EQ(d.at("key123456").as_int(), 123456);
  d.set("key5", -5);
  EXPECT_EQ(d.at("key5").as_int(), -5);
  EXPECT_EQ(d.size(), 200000u);
  EXPECT_TRUE(d.erase("key0"));
  EXPECT_EQ(d.find("key0"), nullptr);
  EXPECT_EQ(d.at("key199999").as_int(), 199999);  // positions after the erase moved
  EXPECT_EQ(d.begin()->first, "key1");
  Value::Dict copy = d;
  EXPECT_EQ(copy.at("key77").as_int(), 77);
}

TEST(Value, DeepEquality) {
  Value a = Value::Dict{{"x", Value::List{1, 2.5, "s", nullptr}}, {"y", true}};
  Value b = Value::Dict{{"x", Value::List{1, 2.5, "s", nullptr}}, {"y", true}};
  EXPECT_EQ(a, b);
  b.as_dict().at("x").as_list()[1] = 2.0;
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(Value(1) == Value(1.0));  // int and float are different kinds
}

TEST(ValueDeathTest, WrongKindAborts) {
  EXPECT_DEATH((void)Value(1).as_string(), "kind int accessed as string");
  EXPECT_DEATH((void)Value::Dict{}.at("k"), "no key 'k'");
}

}  // namespace
}  // namespace tesscpp
