// The endpoint table: names found back, one row per id, kinds as served.
#include "tesscpp/internal/core/endpoint_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tesscpp::core {
namespace {

TEST(EndpointTable, EveryNameAndCommandIsUniqueAndFoundBack) {
  std::set<std::string_view> names;
  std::set<std::string_view> commands;
  for (const EndpointInfo& e : Endpoints()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(commands.insert(e.command).second) << e.command;
    EXPECT_EQ(FindEndpoint(e.name), e.id);
    EXPECT_EQ(&Endpoint(e.id), &e);
  }
  EXPECT_EQ(FindEndpoint("openapi.json"), std::nullopt);
  EXPECT_EQ(FindEndpoint("Apply"), std::nullopt);  // names are exact, as routes are
}

TEST(EndpointTable, GradientsAreWrappedAndNameTheirFields) {
  int gradients = 0;
  for (const EndpointInfo& e : Endpoints()) {
    if (!e.is_gradient()) continue;
    ++gradients;
    EXPECT_EQ(e.kind, EndpointKind::kWrapped) << e.name;
    EXPECT_FALSE(e.noun.empty()) << e.name;
    // Each product takes its vectors: a JVP a tangent, a VJP a cotangent, an HVP both.
    const bool product = e.id != EndpointId::kJacobian;
    EXPECT_EQ(e.tangent_field.empty() && e.cotangent_field.empty(), !product) << e.name;
    EXPECT_EQ(e.answers_inputs(),
              e.id == EndpointId::kVectorJacobianProduct || e.id == EndpointId::kHessianVectorProduct)
        << e.name;
  }
  EXPECT_EQ(gradients, 4);
  EXPECT_EQ(Endpoint(EndpointId::kHessianVectorProduct).tangent_field, "tangent_vector");
  EXPECT_EQ(Endpoint(EndpointId::kHessianVectorProduct).cotangent_field, "cotangent_vector");
  EXPECT_EQ(Endpoint(EndpointId::kHealth).method, "GET");
  EXPECT_EQ(Endpoint(EndpointId::kAbstractEval).kind, EndpointKind::kPlain);
  EXPECT_EQ(Endpoint(EndpointId::kTest).kind, EndpointKind::kRuntime);
}

TEST(EndpointTable, ServedAsTheReferenceServesThem) {
  EXPECT_TRUE(IsServed(Endpoint(EndpointId::kApply), true, false));
  EXPECT_FALSE(IsServed(Endpoint(EndpointId::kJacobian), false, true));
  EXPECT_TRUE(IsServed(Endpoint(EndpointId::kHealth), false, false));  // the runtime's own
  EXPECT_FALSE(IsServed(Endpoint(EndpointId::kTest), false, false));   // debug mode only
  EXPECT_TRUE(IsServed(Endpoint(EndpointId::kTest), false, true));
}

}  // namespace
}  // namespace tesscpp::core
