#include "schema/array_coercion.h"

#include <gtest/gtest.h>

#include "schema/validate.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp {
namespace {

Result<Value> Coerce(const SchemaType& type, std::string_view json) {
  return schema::ValidateValue(type, *ReadJson(json, JsonReadOptions{ArrayDetection::kShaped, {}, 256}));
}

std::string IssueOf(const Result<Value>& r) {
  if (r.ok()) return "ok";
  const ValidationDetail* d = GetValidationDetail(r.status());
  return d == nullptr ? r.status().ToString() : d->issues()[0].type + ": " + d->issues()[0].msg;
}

SchemaType VectorF32() { return SchemaType::Array({kAnyDim}, Dtype::kFloat32); }

TEST(ArrayCoercion, ListsBecomeTensorsOfTheFieldDtype) {
  Value v = *Coerce(VectorF32(), "[1, 2, 3]");
  ASSERT_TRUE(v.is_tensor());
  EXPECT_EQ(v.as_tensor().dtype(), Dtype::kFloat32);
  EXPECT_EQ(v.as_tensor().data_as<float>()[2], 3.0f);
  Value scalar = *Coerce(SchemaType::Scalar(Dtype::kFloat64), "2");
  EXPECT_EQ(scalar.as_tensor().rank(), 0);
  EXPECT_EQ(scalar.as_tensor().data_as<double>()[0], 2.0);
  Value any = *Coerce(SchemaType::Array(ShapeSpec::AnyRank(), std::nullopt), "[[true, false]]");
  EXPECT_EQ(any.as_tensor().dtype(), Dtype::kBool);
  EXPECT_EQ(any.as_tensor().rank(), 2);
}

TEST(ArrayCoercion, SizeOneDimensionsBroadcast) {
  Value v = *Coerce(SchemaType::Array({kAnyDim, 3}, Dtype::kInt32), "[[1], [2]]");
  const Tensor& t = v.as_tensor();
  ASSERT_EQ(t.shape(), *Shape::Make({2, 3}));
  EXPECT_EQ(std::vector<int32_t>(t.data_as<int32_t>(), t.data_as<int32_t>() + 6),
            (std::vector<int32_t>{1, 1, 1, 2, 2, 2}));
}

TEST(ArrayCoercion, ErrorsLikeTheReference) {
  EXPECT_EQ(IssueOf(Coerce(VectorF32(), "[[1]]")),
            "array_dimensionality_mismatch: Array has wrong number of dimensions: got 2D, expected 1D");
  EXPECT_EQ(IssueOf(Coerce(SchemaType::Array({kAnyDim, 3}, Dtype::kFloat32), "[[0, 1], [2, 3]]")),
            "array_shape_mismatch: Array shape (2, 2) is incompatible with expected shape (2, 3)");
  EXPECT_EQ(IssueOf(Coerce(SchemaType::Array({2}, Dtype::kInt32), "[1.5, 2]")),
            "array_dtype_mismatch: Array dtype 'float64' cannot be safely cast to 'int32'");
  EXPECT_EQ(IssueOf(Coerce(SchemaType::Array({2}, Dtype::kInt8), "[1, 300]")),
            "array_value_out_of_range: Array values do not fit into dtype 'int8' (e.g. 300)");
  EXPECT_EQ(IssueOf(Coerce(VectorF32(), "\"x\"")),
            "array_non_numeric: Could not parse value as a numeric array (contains non-numeric data)");
  EXPECT_EQ(IssueOf(Coerce(VectorF32(), "null")).substr(0, 17), "array_non_numeric");
  EXPECT_EQ(IssueOf(Coerce(VectorF32(), "[\"a\"]")).substr(0, 17), "array_non_numeric");
  EXPECT_EQ(IssueOf(Coerce(VectorF32(), "[[1, 2], [3]]")).substr(0, 11), "value_error");
  // An arraydict must fit the field's schema as sent, or it is "non-numeric".
  EXPECT_EQ(
      IssueOf(
          Coerce(
              VectorF32(),
              R"({"shape":[1,3],"dtype":"float32","data":{"buffer":"AACAPwAAAEAAAEBA","encoding":"base64"}})"))
          .substr(0, 17),
      "array_non_numeric");
  EXPECT_EQ(IssueOf(Coerce(VectorF32(),
                           R"({"shape":[2],"dtype":"complex64","data":{"buffer":[1,2],"encoding":"json"}})"))
                .substr(0, 17),
            "array_non_numeric");
}

TEST(ArrayCoercion, CastsCheckEveryValue) {
  Tensor big = *Tensor::Allocate(Dtype::kFloat64, *Shape::Make({2}));
  big.data_as<double>()[0] = 1.0;
  big.data_as<double>()[1] = 1e300;
  auto cast = schema::CastChecked(big, Dtype::kFloat32, nullptr);
  EXPECT_EQ(IssueOf(Result<Value>(cast.status())).substr(0, 24), "array_value_out_of_range");
  Tensor ints = *Tensor::Allocate(Dtype::kInt64, *Shape::Make({2}));
  ints.data_as<int64_t>()[0] = -1;
  ints.data_as<int64_t>()[1] = 5;
  EXPECT_FALSE(schema::CastChecked(ints, Dtype::kUInt8, nullptr).ok());
  ints.data_as<int64_t>()[0] = 255;
  Tensor u8 = *schema::CastChecked(ints, Dtype::kUInt8, nullptr);
  EXPECT_EQ(u8.data()[0], 255);
  Tensor f16 = *schema::CastChecked(ints, Dtype::kFloat16, nullptr);
  EXPECT_EQ(f16.data_as<uint16_t>()[1], 0x4500);                // 5.0
  EXPECT_TRUE(schema::Castable(Dtype::kInt64, Dtype::kUInt8));  // integers: range-checked
  EXPECT_FALSE(schema::Castable(Dtype::kFloat64, Dtype::kInt64));
  EXPECT_FALSE(schema::Castable(Dtype::kComplex64, Dtype::kFloat64));
}

}  // namespace
}  // namespace tesscpp
