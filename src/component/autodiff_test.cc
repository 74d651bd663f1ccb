// autodiff_test.cc: Derive keeps endpoints written by hand, derives the rest,
// and refuses outputs that are not differentiable fields.
#include "tesscpp/autodiff.h"

#include <gtest/gtest.h>

#include "core/status_matchers.h"

namespace tesscpp {
namespace {

Value Scalar(double v) {
  auto t = *NewTensor<double>({});
  t.second[0] = v;
  return Value(t.first);
}

Component Square() {
  Component c("square", "0.1.0");
  c.inputs().Scalar<double>("x", {.differentiable = true});
  c.outputs().Scalar<double>("y", {.differentiable = true});
  c.outputs().Scalar<double>("label");  // not differentiable
  return c;
}

// y = x * x, generically; `extra` names another output to create.
struct SquareFn {
  std::string extra;
  template <typename T>
  Status operator()(autodiff::Context<T>& ctx) const {
    const T x = ctx.Input("x")[0];
    TESS_ASSIGN_OR_RETURN(std::span<T> y, ctx.Output("y", {}));
    y[0] = x * x;
    if (!extra.empty()) return ctx.Output(extra, {}).status();
    return Status::OK();
  }
};

TEST(Autodiff, KeepsHandWrittenEndpointsAndDerivesTheRest) {
  Component c = Square();
  c.VectorJacobianProduct(
      [](const ModelView&, const PathSet&, const PathSet&, const TensorMap&, TensorMap& vjp) {
        vjp.insert_or_assign("x", Scalar(-42.0).as_tensor());  // recognisably hand-written
        return Status::OK();
      });
  autodiff::Derive(c, SquareFn{});
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  const ModelView in(inputs);
  TensorMap vjp, jvp;
  ASSERT_OK(c.vector_jacobian_product().fn(in, {"x"}, {"y"}, {{"y", Scalar(1.0).as_tensor()}}, vjp));
  EXPECT_EQ(vjp.at("x").data_as<double>()[0], -42.0);
  ASSERT_OK(c.jacobian_vector_product().fn(in, {"x"}, {"y"}, {{"x", Scalar(1.0).as_tensor()}}, jvp));
  EXPECT_EQ(jvp.at("y").data_as<double>()[0], 6.0);  // d(x²)/dx at 3, derived
  JacobianMap jac;
  ASSERT_OK(c.jacobian().fn(in, {"x"}, {"y"}, jac));
  EXPECT_EQ(jac.at("y").at("x").data_as<double>()[0], 6.0);
  Record out;
  ASSERT_OK(c.apply().fn(in, out));
  EXPECT_EQ(std::move(out).Finish().as_dict().at("y").as_tensor().data_as<double>()[0], 9.0);
}

TEST(Autodiff, RefusesOutputsThatAreNotDifferentiable) {
  Component c = Square();
  autodiff::Derive(c, SquareFn{"label"});
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  Record out;
  const Status status = c.apply().fn(ModelView(inputs), out);
  EXPECT_STATUS(status, StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'label' is not a differentiable top-level output"), std::string::npos);
}

TEST(Autodiff, NamesAnInputThatIsNotDifferentiable) {
  Component c = Square();
  autodiff::Derive(
      c, [](auto& ctx) { return ctx.Input("z").empty() ? Status::OK() : Status::Internal("unreachable"); });
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  Record out;
  try {
    (void)c.apply().fn(ModelView(inputs), out);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'z' is not a differentiable top-level input"), std::string::npos);
  }
}

}  // namespace
}  // namespace tesscpp
