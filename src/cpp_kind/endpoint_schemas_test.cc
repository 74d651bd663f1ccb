#include "cpp_kind/endpoint_schemas.h"

#include <gtest/gtest.h>

namespace tesscpp::cpp_kind {
namespace {

std::shared_ptr<const ModelSchema> Mesh() {
  const SchemaType table = SchemaType::Dict(SchemaType::Array({kAnyDim}, Dtype::kFloat32).Differentiable());
  auto inner = *ModelSchema::Make(
      "Mesh", {Field("points", SchemaType::Array({kAnyDim, 3}, Dtype::kFloat32).Differentiable()),
               Field("cell_data", table), Field("n", SchemaType::Int()),
               Field("layers", SchemaType::List(SchemaType::Array({2}, Dtype::kFloat64).Differentiable()))});
  return *ModelSchema::Make("InputSchema",
                            {Field("mesh", SchemaType::Model(inner)),
                             Field("s", SchemaType::Scalar(Dtype::kFloat32).Differentiable())});
}

TEST(EndpointSchemas, DifferentiablePathsInDeclarationOrderWithWildcards) {
  auto paths = DifferentiablePaths(*Mesh());
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(paths[0].spelling, "mesh.points");
  EXPECT_FALSE(paths[0].wildcard);
  EXPECT_EQ(paths[1].spelling, "mesh.cell_data.{}");
  EXPECT_TRUE(paths[1].wildcard);
  EXPECT_EQ(paths[1].regex, "mesh\\.cell_data\\.\\{(?:[^{}\\\\]|\\\\.)+\\}");
  EXPECT_EQ(paths[2].spelling, "mesh.layers.[]");
  EXPECT_EQ(paths[2].regex, "mesh\\.layers\\.\\[\\d+\\]");
  EXPECT_EQ(paths[3].spelling, "s");

  EXPECT_EQ(FindDifferentiablePath(paths, "mesh.points"), &paths[0]);
  EXPECT_EQ(FindDifferentiablePath(paths, "mesh.cell_data.{t}"), &paths[1]);
  EXPECT_EQ(FindDifferentiablePath(paths, "mesh.layers.[3]"), &paths[2]);
  EXPECT_EQ(FindDifferentiablePath(paths, "mesh.n"), nullptr);
  EXPECT_EQ(FindDifferentiablePath(paths, "mesh.cell_data.{}"), nullptr);  // a pattern is not a path
}

TEST(EndpointSchemas, DerivedModelsArePrefixedAndAbstractOnesUseShapeDType) {
  auto derived = DeriveModel(*Mesh(), "AbstractEval_", /*abstract=*/true);
  EXPECT_EQ(derived->name(), "AbstractEval_InputSchema");
  const SchemaType& mesh = derived->fields()[0].type;
  EXPECT_EQ(mesh.model()->name(), "AbstractEval_Mesh");
  EXPECT_EQ(mesh.model()->fields()[0].type.kind(), SchemaType::Kind::kShapeDType);
  EXPECT_EQ(mesh.model()->fields()[1].type.item().kind(), SchemaType::Kind::kShapeDType);
}

TEST(EndpointSchemas, FieldOrderListsEveryModel) {
  auto order = FieldOrder(*Mesh());
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0].first, "");
  EXPECT_EQ(order[0].second, (std::vector<std::string>{"mesh", "s"}));
  EXPECT_EQ(order[1].first, "mesh");
  EXPECT_EQ(order[1].second, (std::vector<std::string>{"points", "cell_data", "n", "layers"}));
}

}  // namespace
}  // namespace tesscpp::cpp_kind
