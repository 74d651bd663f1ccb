#include "tesscpp/validation_issue.h"

#include <gtest/gtest.h>

namespace tesscpp {
namespace {

TEST(Validation, FailureCarriesIssues) {
  Status s = ValidationFailure("missing", "Field required", Value::Dict{{"a", 1}});
  EXPECT_EQ(s.code(), StatusCode::kValidationError);
  const ValidationDetail* detail = GetValidationDetail(s);
  ASSERT_NE(detail, nullptr);
  ASSERT_EQ(detail->issues().size(), 1u);
  EXPECT_EQ(detail->issues()[0].type, "missing");
  EXPECT_EQ(GetValidationDetail(Status::Internal("x")), nullptr);
}

TEST(Validation, PrefixesLocations) {
  Status s = PrefixLocation(ValidationFailure("int_type", "Input should be a valid integer", Value()),
                            {Value("inputs"), Value("mesh"), Value(int64_t{3})});
  const auto& issue = GetValidationDetail(s)->issues()[0];
  ASSERT_EQ(issue.loc.size(), 3u);
  EXPECT_EQ(issue.loc[2].as_int(), 3);
  EXPECT_EQ(s.message().rfind("inputs.mesh.3: ", 0), 0u) << s.message();
  EXPECT_NE(GetValidationDetail(s)->ToString().find(
                "inputs.mesh.3: Input should be a valid integer [type=int_type]"),
            std::string::npos);
  // A status without issues keeps its code and gains the location as context.
  Status plain = PrefixLocation(Status::DecodeError("bad"), {Value("a")});
  EXPECT_EQ(plain.message(), "a: bad");
}

TEST(Validation, FastApiBody) {
  std::vector<ValidationIssue> issues{
      {"value_error",
       {Value("inputs")},
       "Value error, nope",
       Value::Dict{{"a", 1}},
       Value::Dict{{"error", Value::Dict{}}}},
      {"missing", {Value("jac_outputs")}, "Field required", Value::Dict{}, Value()}};
  Value body = ValidationIssuesToJson(issues, {Value("body")});
  const Value::List& detail = body.as_dict().at("detail").as_list();
  ASSERT_EQ(detail.size(), 2u);
  EXPECT_EQ(detail[0].as_dict().at("loc"), Value(Value::List{"body", "inputs"}));
  EXPECT_EQ(detail[0].as_dict().at("ctx"), Value(Value::Dict{{"error", Value::Dict{}}}));
  EXPECT_FALSE(detail[1].as_dict().contains("ctx"));  // pydantic omits an empty context
  std::vector<std::string> keys;
  for (const auto& [key, value] : detail[0].as_dict()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"type", "loc", "msg", "input", "ctx"}));
}

}  // namespace
}  // namespace tesscpp
