#include "tesscpp/internal/codec/json.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tesscpp {
namespace {

std::string Write(const Value& v) {
  auto out = WriteJson(v);
  EXPECT_OK(out);
  return out.ok() ? std::string(out->string_view()) : "";
}

Status ReadError(std::string_view text) {
  auto r = ReadJson(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.status();
}

TEST(JsonRead, Scalars) {
  EXPECT_TRUE(ReadJson("null")->is_null());
  EXPECT_EQ(ReadJson("true")->as_bool(), true);
  EXPECT_EQ(ReadJson("-42")->as_int(), -42);
  EXPECT_EQ(ReadJson("18446744073709551615")->as_uint(), 18446744073709551615u);
  EXPECT_EQ(ReadJson("2.5")->as_number(), 2.5);
  EXPECT_EQ(ReadJson("1e400")->as_number(), INFINITY);
  EXPECT_EQ(ReadJson("\"a\\u00e9\\n\\\"\"")->as_string(), "a\xc3\xa9\n\"");
  // Beyond 64 bits: the nearest double (Python would keep an exact int).
  EXPECT_EQ(ReadJson("123456789012345678901234567890")->as_number(), 1.2345678901234568e29);
}

TEST(JsonRead, NumbersRoundTripExactly) {
  for (double v : {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308, 1e16, 123456.789,
                   0.30000000000000004}) {
    EXPECT_EQ(ReadJson(Write(Value(v)))->as_number(), v) << Write(Value(v));
  }
  for (int64_t v :
       {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(ReadJson(Write(Value(v)))->as_int(), v);
  }
}

TEST(JsonRead, ExactNumbersRefuseWhatOnlyADoubleApproximates) {
  // Approximated by default (JsonRead.Scalars); with exact_numbers refused
  // wherever they are, array buffers included, for a reader to parse itself.
  JsonReadOptions exact;
  exact.exact_numbers = true;
  exact.arrays = ArrayDetection::kShaped;
  for (const char* doc :
       {"18446744073709551616", "[-1e400]", "-99999999999999999999",
        R"({"a": {"shape": [2], "dtype": "float64", "data": {"buffer": [1, 1e400], "encoding": "json"}}})"}) {
    EXPECT_EQ(ReadJson(doc, exact).status().code(), StatusCode::kOutOfRange) << doc;
  }
  // The ends of the 64-bit ranges are exact, and read either way.
  EXPECT_EQ(ReadJson("18446744073709551615", exact)->as_uint(), 18446744073709551615u);
  EXPECT_EQ(ReadJson("-9223372036854775808", exact)->as_int(), std::numeric_limits<int64_t>::min());
}

TEST(JsonRead, ContainersKeepOrder) {
  Value v = *ReadJson(R"({"z": [1, 2.0, "x", null, {"k": false}], "a": {}, "m": []})");
  ASSERT_TRUE(v.is_dict());
  std::vector<std::string> keys;
  for (const auto& [k, item] : v.as_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
  const auto& list = v.as_dict().at("z").as_list();
  ASSERT_EQ(list.size(), 5u);
  EXPECT_TRUE(list[0].is_int());
  EXPECT_TRUE(list[1].is_float());
  EXPECT_EQ(list[4].as_dict().at("k").as_bool(), false);
}

TEST(JsonRead, HugeObjectsParseInLinearTime) {
  std::string doc = "{";
  for (int i = 0; i < 200000; ++i)
    doc += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  doc += "}";
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;  // the server's setting, which looks keys up per object
  Value v = *ReadJson(doc, read);
  EXPECT_EQ(v.as_dict().size(), 200000u);
  EXPECT_EQ(v.as_dict().at("k199999").as_int(), 199999);
}

TEST(JsonRead, DuplicateKeysKeepTheLastValueLikePython) {
  Value v = *ReadJson(R"({"a": 1, "b": 2, "a": 3})");
  EXPECT_EQ(v.as_dict().at("a").as_int(), 3);
  EXPECT_EQ(v.as_dict().begin()->first, "a");
}

TEST(JsonRead, MalformedDocumentsAreDecodeErrors) {
  for (const char* bad : {"",    "{",          "[1, 2",          "{\"a\": }",  "[1,]", "{\"a\" 1}", "tru",
                          "nul", "01",         "\"unterminated", "[1] 2",      "{}}",  "\"\\x\"",   "1.",
                          "-",   "{\"a\":1,}", "\xff",           "[\"\xc3\"]", "NaN",  "Infinity"}) {
    Status s = ReadError(bad);
    EXPECT_EQ(s.code(), StatusCode::kDecodeError) << bad << " -> " << s;
  }
}

TEST(JsonRead, ErrorsNameTheirPath) {
  Status s = ReadError(R"({"a": {"b": [1, 2, tru]}})");
  EXPECT_NE(s.message().find("a.b.[2]"), std::string::npos) << s;
}

TEST(JsonRead, DeepNestingIsRefused) {
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  Status s = ReadError(deep);
  EXPECT_EQ(s.code(), StatusCode::kDecodeError);
  EXPECT_NE(s.message().find("deeper than 256"), std::string::npos) << s;
  const std::string very_deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(ReadError(very_deep).code(), StatusCode::kDecodeError);
  JsonReadOptions shallow;
  shallow.max_depth = 3;
  EXPECT_TRUE(ReadJson("[[[1]]]", shallow).ok());
  EXPECT_FALSE(ReadJson("[[[[1]]]]", shallow).ok());
}

TEST(JsonWrite, CompactWithOrjsonSpellings) {
  Value v = Value::Dict{{"a", Value::List{1, 2.0, 0.1, -0.0, 1e16, 1e-7, true, nullptr}},
                        {"s", "q\"\\\n\t\x01\x7f\xc3\xa9"},
                        {"big", uint64_t{18446744073709551615u}}};
  EXPECT_EQ(Write(v), R"({"a":[1,2.0,0.1,-0.0,1e+16,1e-7,true,null],"s":"q\"\\\n\t\u0001)"
                      "\x7f\xc3\xa9"
                      R"(","big":18446744073709551615})");
}

TEST(JsonWrite, NonFiniteFloatsBecomeNullLikeOrjson) {
  EXPECT_EQ(Write(Value::List{NAN, INFINITY, -INFINITY}), "[null,null,null]");
}

TEST(JsonWrite, RoundTripsThroughTheReader) {
  Value v = Value::Dict{{"nested", Value::Dict{{"list", Value::List{Value::List{}, Value::Dict{}}}}},
                        {"unicode", "\xe2\x80\xa8 \xf0\x9f\x98\x80"},
                        {"neg", int64_t{-7}}};
  EXPECT_EQ(*ReadJson(Write(v)), v);
}

}  // namespace
}  // namespace tesscpp
