// DeriveByFiniteDifferences on a small component, called directly (the
// comparison with tesseract-core's helpers: tests/conformance/test_finite_differences.py).
#include "tesscpp/finite_differences.h"

#include <gtest/gtest.h>

#include "support/test_tensors.h"

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

// y = x * sum(x²) with its VJP by hand: the HVP is differenced from it.
Component Scaled() {
  Component c("scaled", "1");
  c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  c.Apply([](const ModelView&, Record&) { return Status::InvalidArgument("not called"); });
  c.VectorJacobianProduct(
      [](const ModelView& in, const PathSet&, const PathSet&, const TensorMap& ct, TensorMap& vjp) -> Status {
        const Tensor& x = in.value().as_dict().find("x")->as_tensor();
        const auto n = x.num_elements();
        const double* xs = x.data_as<const double>();
        const double* u = ct.at("y").data_as<const double>();
        double xx = 0, ux = 0;
        for (int64_t i = 0; i < n; ++i) xx += xs[i] * xs[i], ux += u[i] * xs[i];
        TESS_ASSIGN_OR_RETURN(auto g, NewTensor<double>({n}));
        for (int64_t i = 0; i < n; ++i) g.second[i] = u[i] * xx + 2 * xs[i] * ux;
        vjp.insert_or_assign("x", g.first);
        return Status::OK();
      });
  DeriveHvpByFiniteDifferences(c);
  return c;
}

TEST(FiniteDifferences, HessianVectorProductsFromTheVjp) {
  const Component c = Scaled();
  EXPECT_NE(c.hessian_vector_product().doc.find("Central finite differences"), std::string::npos);
  const std::vector<double> x{1.0, -2.0, 0.5}, u{0.3, 1.0, -0.7}, v{-1.0, 0.25, 2.0};
  const Value inputs = Value::Dict{{"x", Value(testing::Vector(x))}};
  TensorMap hvp;
  ASSERT_TRUE(
      c.hessian_vector_product()
          .fn(ModelView(inputs), {"x"}, {"y"}, {{"x", testing::Vector(v)}}, {{"y", testing::Vector(u)}}, hvp)
          .ok());
  // H v = 2 v (u.x) + 2 x (u.v) + 2 u (x.v).
  double ux = 0, uv = 0, xv = 0;
  for (size_t i = 0; i < 3; ++i) ux += u[i] * x[i], uv += u[i] * v[i], xv += x[i] * v[i];
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(hvp.at("x").data_as<double>()[i], 2 * v[i] * ux + 2 * x[i] * uv + 2 * u[i] * xv, 1e-7) << i;
  }
  TensorMap zero;  // along nothing: zeros, no division by a zero step
  ASSERT_TRUE(c.hessian_vector_product()
                  .fn(ModelView(inputs), {"x"}, {"y"}, {{"x", testing::Vector({0, 0, 0})}},
                      {{"y", testing::Vector(u)}}, zero)
                  .ok());
  EXPECT_EQ(zero.at("x").data_as<double>()[2], 0.0);
}

}  // namespace
}  // namespace tesscpp
