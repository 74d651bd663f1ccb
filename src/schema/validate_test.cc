#include "schema/validate.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/status_matchers.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp {
namespace {

// The first issue's type, or "ok".
std::string FirstIssue(const SchemaType& type, std::string_view json) {
  auto r = schema::ValidateValue(type, *ReadJson(json, JsonReadOptions{ArrayDetection::kShaped, {}, 256}));
  if (r.ok()) return "ok";
  const ValidationDetail* detail = GetValidationDetail(r.status());
  return detail == nullptr ? r.status().ToString() : detail->issues()[0].type;
}

Value Valid(const SchemaType& type, std::string_view json) {
  auto r = schema::ValidateValue(type, *ReadJson(json, JsonReadOptions{ArrayDetection::kShaped, {}, 256}));
  EXPECT_OK(r) << json << ": " << r.status();
  return r.ok() ? *r : Value();
}

// pydantic 2's lax rules, as printed by pydantic itself for the same inputs.
// A name too long to resolve behind a symlink out of the input directory:
// refused, where folding ".." lexically would step back inside.
TEST(Validate, InputPathsThatCannotBeResolvedAreRefused) {
  const auto root = std::filesystem::temp_directory_path() / ("tesscpp_paths_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "in");
  std::filesystem::create_directory_symlink("/etc", root / "in" / "ext");
  schema::ValidateOptions options;
  options.input_path = (root / "in").string();
  const std::string sneaky = "ext/" + std::string(300, 'A') + "/../hostname";
  auto refused = schema::ValidateValue(SchemaType::InputPath(), Value(sneaky), options);
  ASSERT_FALSE(refused.ok());
  const ValidationDetail* detail = GetValidationDetail(refused.status());
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->issues()[0].type, "value_error");
  EXPECT_NE(detail->issues()[0].msg.find("Invalid input file reference"), std::string::npos)
      << detail->issues()[0].msg;
  std::ofstream(root / "in" / "a.txt") << "x";
  auto accepted = schema::ValidateValue(SchemaType::InputPath(), Value("./a.txt"), options);
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  EXPECT_EQ(accepted->as_string(), (root / "in" / "a.txt").string());
  std::filesystem::remove_all(root);
}

TEST(Validate, IntsLikePydantic) {
  const SchemaType t = SchemaType::Int();
  EXPECT_EQ(Valid(t, "true").as_int(), 1);
  EXPECT_EQ(Valid(t, "\"5\"").as_int(), 5);
  EXPECT_EQ(Valid(t, "\" 7 \"").as_int(), 7);
  EXPECT_EQ(Valid(t, "\"5.0\"").as_int(), 5);
  EXPECT_EQ(Valid(t, "5.0").as_int(), 5);
  EXPECT_EQ(Valid(t, "\"1_000\"").as_int(), 1000);
  EXPECT_EQ(FirstIssue(t, "5.5"), "int_from_float");
  EXPECT_EQ(FirstIssue(t, "\"abc\""), "int_parsing");
  EXPECT_EQ(FirstIssue(t, "null"), "int_type");
  EXPECT_EQ(FirstIssue(t, "[1]"), "int_type");
  EXPECT_EQ(FirstIssue(t, "1e20"), "int_parsing_size");
}

TEST(Validate, FloatsAndStringsLikePydantic) {
  const SchemaType f = SchemaType::Float();
  EXPECT_EQ(Valid(f, "true").as_number(), 1.0);
  EXPECT_EQ(Valid(f, "\"1.5\"").as_number(), 1.5);
  EXPECT_TRUE(std::isinf(Valid(f, "\"inf\"").as_number()));
  EXPECT_TRUE(std::isnan(Valid(f, "\"nan\"").as_number()));
  EXPECT_EQ(Valid(f, "3").as_number(), 3.0);
  EXPECT_TRUE(Valid(f, "3").is_float());
  EXPECT_EQ(FirstIssue(f, "\"abc\""), "float_parsing");
  EXPECT_EQ(FirstIssue(f, "null"), "float_type");
  const SchemaType s = SchemaType::String();
  EXPECT_EQ(FirstIssue(s, "5"), "string_type");
  EXPECT_EQ(FirstIssue(s, "true"), "string_type");
  EXPECT_EQ(Valid(s, "\"x\"").as_string(), "x");
}

TEST(Validate, BoolsLikePydantic) {
  const SchemaType b = SchemaType::Bool();
  for (const char* yes : {"1", "1.0", "\"TRUE\"", "\"Yes\"", "\"on\"", "\"t\"", "\"1\"", "true"}) {
    EXPECT_EQ(Valid(b, yes), Value(true)) << yes;
  }
  for (const char* no : {"0", "\"off\"", "\"F\"", "\"0\"", "false"})
    EXPECT_EQ(Valid(b, no), Value(false)) << no;
  EXPECT_EQ(FirstIssue(b, "0.5"), "bool_type");
  EXPECT_EQ(FirstIssue(b, "\" true\""), "bool_parsing");
  EXPECT_EQ(FirstIssue(b, "\"2\""), "bool_parsing");
  EXPECT_EQ(FirstIssue(b, "2"), "bool_parsing");
  EXPECT_EQ(FirstIssue(b, "null"), "bool_type");
  EXPECT_EQ(FirstIssue(b, "[1]"), "bool_type");
}

// abstract_eval's leaves resolve their dtype as arrays do (tesseract-core's
// resolve_dtype): to the declared one where NumPy casts it within its kind.
TEST(Validate, ShapeDTypesResolveToTheDeclaredDtype) {
  const SchemaType f32 = SchemaType::ShapeDType(ShapeSpec::Scalar(), Dtype::kFloat32);
  EXPECT_EQ(Valid(f32, R"({"shape": [], "dtype": "float16"})").as_dict().at("dtype").as_string(), "float32");
  EXPECT_EQ(Valid(f32, R"({"shape": [], "dtype": "int8"})").as_dict().at("dtype").as_string(), "float32");
  EXPECT_EQ(FirstIssue(f32, R"({"shape": [], "dtype": "complex64"})"), "array_dtype_mismatch");
  EXPECT_EQ(Valid(f32, R"({"shape": [], "dtype": "float64"})").as_dict().at("dtype").as_string(), "float32");
  const SchemaType any = SchemaType::ShapeDType(ShapeSpec::Scalar(), std::nullopt);
  EXPECT_EQ(Valid(any, R"({"shape": [], "dtype": "complex64"})").as_dict().at("dtype").as_string(),
            "complex64");
}

TEST(Validate, ContainersLocateTheirItems) {
  const SchemaType list = SchemaType::List(SchemaType::Int());
  EXPECT_EQ(FirstIssue(list, "\"abc\""), "list_type");
  auto r = schema::ValidateValue(list, *ReadJson("[1, \"2\", \"x\"]"));
  ASSERT_FALSE(r.ok());
  const auto& issue = GetValidationDetail(r.status())->issues()[0];
  EXPECT_EQ(issue.type, "int_parsing");
  EXPECT_EQ(issue.loc, (std::vector<Value>{Value(int64_t{2})}));
  const SchemaType dict = SchemaType::Dict(SchemaType::Int());
  EXPECT_EQ(FirstIssue(dict, "[1]"), "dict_type");
  r = schema::ValidateValue(dict, *ReadJson(R"({"a": "1", "b": "x"})"));
  EXPECT_EQ(GetValidationDetail(r.status())->issues()[0].loc, (std::vector<Value>{Value("b")}));
  const SchemaType opt = SchemaType::Optional(SchemaType::Int());
  EXPECT_TRUE(Valid(opt, "null").is_null());
  EXPECT_EQ(Valid(opt, "2.0").as_int(), 2);
  EXPECT_EQ(FirstIssue(opt, "\"x\""), "int_parsing");
}

TEST(Validate, ModelsCollectEveryIssueThenExtras) {
  auto inner = *ModelSchema::Make("Inner", {Field("n", SchemaType::Int())});
  auto model =
      *ModelSchema::Make("Outer", {Field("a", SchemaType::Int()), Field("inner", SchemaType::Model(inner)),
                                   Field("flag", SchemaType::Bool(), "", Value(false))});
  auto r = schema::ValidateModel(*model, *ReadJson(R"({"inner": {"n": "x"}, "zzz": 1})"));
  ASSERT_FALSE(r.ok());
  const auto& issues = GetValidationDetail(r.status())->issues();
  ASSERT_EQ(issues.size(), 3u);
  EXPECT_EQ(issues[0].type, "missing");
  EXPECT_EQ(issues[0].loc, (std::vector<Value>{Value("a")}));
  EXPECT_EQ(issues[1].type, "int_parsing");
  EXPECT_EQ(issues[1].loc, (std::vector<Value>{Value("inner"), Value("n")}));
  EXPECT_EQ(issues[2].type, "extra_forbidden");
  Value ok = *schema::ValidateModel(*model, *ReadJson(R"({"a": 1, "inner": {"n": 2}})"));
  EXPECT_EQ(ok.as_dict().at("flag"), Value(false));  // the default, filled in
}

TEST(Validate, ValidatorsRunAfterFieldsPass) {
  int calls = 0;
  auto model = *ModelSchema::Make("M", {Field("a", SchemaType::Int())}, {[&calls](const Value& m) {
                                    ++calls;
                                    if (m.as_dict().at("a").as_int() < 0)
                                      return Status::InvalidArgument("a must be >= 0");
                                    return Status::OK();
                                  }});
  EXPECT_FALSE(schema::ValidateModel(*model, *ReadJson(R"({"a": "x"})")).ok());
  EXPECT_EQ(calls, 0);
  auto r = schema::ValidateModel(*model, *ReadJson(R"({"a": -1})"));
  const auto& issue = GetValidationDetail(r.status())->issues()[0];
  EXPECT_EQ(issue.type, "value_error");
  EXPECT_EQ(issue.msg, "Value error, a must be >= 0");
  EXPECT_TRUE(issue.loc.empty());
  EXPECT_EQ(calls, 1);
}

TEST(Validate, ModelNamesMustBeIdentifiers) {
  EXPECT_FALSE(ModelSchema::Make("M", {Field("a b", SchemaType::Int())}).ok());
  EXPECT_FALSE(ModelSchema::Make("M", {Field("a", SchemaType::Int()), Field("a", SchemaType::Int())}).ok());
}

}  // namespace
}  // namespace tesscpp
