// The reference runtime's answers to recorded /apply requests
// (tests/golden/generate_runtime.py, run against the Python fixtures in
// tests/fixtures/python/): reading and validating the same bodies against the
// same schemas must accept what it accepted and report the same issues.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/status_matchers.h"
#include "schema/validate.h"
#include "support/test_files.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::ReadFile;

std::string ShapeText(const Tensor& t) { return t.shape().ToString(); }

// The fixtures' InputSchemas, as their tesseract_api.py declares them.
std::shared_ptr<const ModelSchema> VectoraddInputs() {
  const SchemaType vector = SchemaType::Array({kAnyDim}, Dtype::kFloat32).Differentiable();
  return *ModelSchema::Make(
      "InputSchema",
      {Field("a", vector, "An arbitrary vector."),
       Field("b", vector, "An arbitrary vector. Needs to have the same dimensions as a."),
       Field("s", SchemaType::Scalar(Dtype::kFloat32).Differentiable(), "A scalar.", Value(1)),
       Field("normalize", SchemaType::Bool(), "True if the output should be normalized, False otherwise.",
             Value(false))},
      {[](const Value& m) {
        const Tensor& a = m.as_dict().at("a").as_tensor();
        const Tensor& b = m.as_dict().at("b").as_tensor();
        if (a.shape() == b.shape()) return Status::OK();
        return Status::InvalidArgument("a and b must have the same shape. Got ", ShapeText(a), " and ",
                                       ShapeText(b), " instead.");
      }});
}

std::shared_ptr<const ModelSchema> UnivariateInputs() {
  const SchemaType f32 = SchemaType::Scalar(Dtype::kFloat32);
  return *ModelSchema::Make("InputSchema",
                            {Field("x", f32.Differentiable(), "First coordinate.", Value(0.0)),
                             Field("y", f32.Differentiable(), "Second coordinate.", Value(0.0)),
                             Field("a", f32, "Scale of the first term.", Value(1.0)),
                             Field("b", f32, "Scale of the second term.", Value(100.0))});
}

std::shared_ptr<const ModelSchema> MeshstatsInputs() {
  const SchemaType table = SchemaType::Dict(SchemaType::Array({kAnyDim, kAnyDim}, Dtype::kFloat32));
  auto mesh =
      *ModelSchema::Make("VolumetricMeshData",
                         {Field("n_points", SchemaType::Int()), Field("n_cells", SchemaType::Int()),
                          Field("points", SchemaType::Array({kAnyDim, 3}, Dtype::kFloat32).Differentiable()),
                          Field("num_points_per_cell", SchemaType::Array({kAnyDim}, Dtype::kFloat32)),
                          Field("cell_connectivity", SchemaType::Array({kAnyDim}, Dtype::kInt32)),
                          Field("cell_data", table), Field("point_data", table)},
                         {[](const Value& m) {
                           const int64_t cells = m.as_dict().at("n_cells").as_int();
                           if (m.as_dict().at("num_points_per_cell").as_tensor().shape()[0] != cells) {
                             return Status::InvalidArgument("Length of num_points_per_cell must be ", cells);
                           }
                           return Status::OK();
                         }});
  return *ModelSchema::Make("InputSchema", {Field("mesh", SchemaType::Model(mesh))});
}

std::shared_ptr<const ModelSchema> NoopInputs() {
  return *ModelSchema::Make("InputSchema",
                            {Field("x", SchemaType::Array(ShapeSpec::AnyRank(), std::nullopt))});
}

// What the server reads a body into, then validates: arraydicts decode while
// parsing, and their problems come back as issues located in the body.
Result<Value> ReadAndValidate(const ModelSchema& request, const Value& body) {
  TESS_ASSIGN_OR_RETURN(Buffer text, WriteJson(body));
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  TESS_ASSIGN_OR_RETURN(Value parsed, ReadJson(text, read));
  return schema::ValidateModel(request, parsed);
}

// Issue types whose message text is ours, not the reference's: decode errors
// name our decoder's problem, and NumPy's ragged-list message ends with the
// detected shape, which a streaming parser does not know yet.
bool MessageIsOurs(const std::string& type) { return type == "array_decode_error" || type == "value_error"; }

void CheckFixture(const char* fixture, const std::shared_ptr<const ModelSchema>& inputs) {
  auto request = *ModelSchema::Make("ApplyInputSchema", {Field("inputs", SchemaType::Model(inputs),
                                                               "The input data to apply the Tesseract to.")});
  const Value cases = *ReadJson(ReadFile(DataPath(std::string("golden/runtime/") + fixture + ".cases.json")));
  int checked = 0;
  for (const Value& c : cases.as_list()) {
    const Value::Dict& recorded = c.as_dict();
    if (recorded.at("path").as_string() != "/apply") continue;
    const std::string name = recorded.at("name").as_string();
    const int64_t status = recorded.at("status").as_int();
    if (status == 500) continue;  // the component failed, not validation
    auto result = ReadAndValidate(*request, recorded.at("body"));
    if (status == 200) {
      EXPECT_OK(result) << fixture << "/" << name << ": " << result.status();
      ++checked;
      continue;
    }
    ASSERT_EQ(status, 422) << name;
    ASSERT_FALSE(result.ok()) << fixture << "/" << name << " was accepted";
    const ValidationDetail* detail = GetValidationDetail(result.status());
    ASSERT_NE(detail, nullptr) << fixture << "/" << name << ": " << result.status();
    const Value::List& want = recorded.at("response").as_dict().at("detail").as_list();
    ASSERT_EQ(detail->issues().size(), want.size()) << fixture << "/" << name << ": " << result.status();
    for (size_t i = 0; i < want.size(); ++i) {
      const ValidationIssue& got = detail->issues()[i];
      const Value::Dict& expected = want[i].as_dict();
      Value::List loc{"body"};
      loc.insert(loc.end(), got.loc.begin(), got.loc.end());
      EXPECT_EQ(got.type, expected.at("type").as_string()) << fixture << "/" << name;
      EXPECT_EQ(Value(loc), expected.at("loc")) << fixture << "/" << name;
      if (!MessageIsOurs(got.type)) {
        EXPECT_EQ(got.msg, expected.at("msg").as_string()) << fixture << "/" << name;
      }
      if (const Value* ctx = expected.find("ctx"); ctx != nullptr && !MessageIsOurs(got.type)) {
        EXPECT_EQ(got.ctx, *ctx) << fixture << "/" << name;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 5) << fixture;
}

TEST(GoldenCases, Vectoradd) { CheckFixture("vectoradd", VectoraddInputs()); }
TEST(GoldenCases, Univariate) { CheckFixture("univariate", UnivariateInputs()); }
TEST(GoldenCases, Meshstats) { CheckFixture("meshstats", MeshstatsInputs()); }
TEST(GoldenCases, Noop) { CheckFixture("noop", NoopInputs()); }

}  // namespace
}  // namespace tesscpp
