// DeriveByFiniteDifferences on a small component, called directly (the
// comparison with tesseract-core's helpers: tests/conformance/test_finite_differences.py).
#include "tesscpp/finite_differences.h"

#include <gtest/gtest.h>

namespace tesscpp {
namespace {

// y = x² elementwise, with a hand-written VJP that must be kept.
Component Square(FiniteDifferences fd) {
  Component c("square", "1");
  auto x = c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    const auto v = in[x].values();
    TESS_ASSIGN_OR_RETURN(std::span<double> w, out.NewArray<double>(y, {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) w[i] = v[i] * v[i];
    return Status::OK();
  });
  c.VectorJacobianProduct([](const ModelView&, const PathSet&, const PathSet&, const TensorMap&, TensorMap&) {
    return Status::InvalidArgument("hand-written");
  });
  DeriveByFiniteDifferences(c, std::move(fd));
  return c;
}

Value Inputs() {
  auto x = *NewTensor<double>({2});
  x.second[0] = 1.0;
  x.second[1] = 3.0;
  return Value(Value::Dict{{"x", Value(x.first)}});
}

TEST(FiniteDifferences, CentralAndForwardQuotients) {
  const Value inputs = Inputs();
  for (auto [algorithm, offset] :
       {std::pair{FdAlgorithm::kCentral, 0.0}, std::pair{FdAlgorithm::kForward, 1e-3}}) {
    Component c = Square({.algorithm = algorithm, .eps = 1e-3});
    JacobianMap jac;
    ASSERT_TRUE(c.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac).ok());
    const Tensor& block = jac.at("y").at("x");
    ASSERT_EQ(block.num_elements(), 4);
    const double* d = block.data_as<double>();
    EXPECT_NEAR(d[0], 2.0 + offset, 1e-9);  // ∂y0/∂x0
    EXPECT_NEAR(d[1], 0.0, 1e-12);
    EXPECT_NEAR(d[3], 6.0 + offset, 1e-9);
    // The hand-written VJP stays.
    TensorMap vjp;
    EXPECT_EQ(c.vector_jacobian_product().fn(ModelView(inputs), {"x"}, {"y"}, {}, vjp).message(),
              "hand-written");
  }
}

TEST(FiniteDifferences, StepsPerPathMustNameExactlyTheDifferentiatedOnes) {
  const Value inputs = Inputs();
  JacobianMap jac;
  Component missing = Square({.eps_by_path = {{"z", 1e-3}}});
  const Status s = missing.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac);
  EXPECT_EQ(s.message(), "eps is missing a step size for input path(s): x");
  Component extra = Square({.eps_by_path = {{"x", 1e-3}, {"z", 1e-3}}});
  EXPECT_EQ(extra.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac).message(),
            "eps names input path(s) that are not being differentiated: z");
}

TEST(FiniteDifferences, StepsPerPathAreTaken) {
  const Value inputs = Inputs();
  JacobianMap jac;
  Component c = Square({.algorithm = FdAlgorithm::kForward, .eps_by_path = {{"x", 1e-2}}});
  ASSERT_TRUE(c.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac).ok());
  const double* d = jac.at("y").at("x").data_as<double>();
  EXPECT_NEAR(d[0], 2.0 + 1e-2, 1e-9);  // the forward quotient's error is the step: this one's
  EXPECT_NEAR(d[3], 6.0 + 1e-2, 1e-9);
}

// y = x for float32 x: the perturbed inputs are float32 values, so the
// quotient is (float(x + h) - float(x - h)) / 2h, not exactly 1.
TEST(FiniteDifferences, PerturbationsAreRoundedToTheInputsDtype) {
  Component c("identity32", "1");
  auto x = c.inputs().Array<float>("x", {kAnyDim}, {.differentiable = true});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    const auto v = in[x].values();
    TESS_ASSIGN_OR_RETURN(std::span<double> w, out.NewArray<double>(y, {static_cast<int64_t>(v.size())}));
    std::copy(v.begin(), v.end(), w.begin());
    return Status::OK();
  });
  DeriveByFiniteDifferences(c, {.algorithm = FdAlgorithm::kCentral, .eps = 1e-3});
  auto t = *NewTensor<float>({1});
  t.second[0] = 1.0F;
  const Value inputs(Value::Dict{{"x", Value(t.first)}});
  JacobianMap jac;
  ASSERT_TRUE(c.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac).ok());
  const double rounded = (static_cast<double>(static_cast<float>(1.0 + 1e-3)) -
                          static_cast<double>(static_cast<float>(1.0 - 1e-3))) /
                         2e-3;
  ASSERT_NE(rounded, 1.0);
  EXPECT_DOUBLE_EQ(jac.at("y").at("x").data_as<double>()[0], rounded);
}

// The positive elements of x: an output whose shape follows the values.
TEST(FiniteDifferences, RefusesOutputsThatChangeShape) {
  Component c("positive", "1");
  auto x = c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    std::vector<double> kept;
    for (double v : in[x].values()) {
      if (v > 0) kept.push_back(v);
    }
    TESS_ASSIGN_OR_RETURN(std::span<double> w, out.NewArray<double>(y, {static_cast<int64_t>(kept.size())}));
    std::copy(kept.begin(), kept.end(), w.begin());
    return Status::OK();
  });
  DeriveByFiniteDifferences(c, {.eps = 1e-3});
  auto t = *NewTensor<double>({2});
  t.second[0] = 1.0;
  t.second[1] = 0.0;
  const Value inputs(Value::Dict{{"x", Value(t.first)}});
  JacobianMap jac;
  EXPECT_EQ(c.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac).message(),
            "finite differences: output 'y' changed shape");
}

}  // namespace
}  // namespace tesscpp
