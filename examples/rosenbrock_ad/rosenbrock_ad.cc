// rosenbrock_ad: examples/univariate's Rosenbrock function written once,
// generically, with every derivative endpoint derived (tesscpp/autodiff.h).
#include "tesscpp/autodiff.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeRosenbrock() {
  Component c("rosenbrock_ad", "0.1.0", "The Rosenbrock function of two variables, derivatives derived.\n");
  c.inputs().Scalar<float>("x", {.differentiable = true, .doc = "First coordinate.", .default_value = 0.0});
  c.inputs().Scalar<float>("y", {.differentiable = true, .doc = "Second coordinate.", .default_value = 0.0});
  auto a = c.inputs().Scalar<float>("a", {.doc = "Scale of the first term.", .default_value = 1.0});
  auto b = c.inputs().Scalar<float>("b", {.doc = "Scale of the second term.", .default_value = 100.0});
  c.outputs().Scalar<float>("result", {.differentiable = true, .doc = "Value of the Rosenbrock function."});

  // The function, once, for any number type T.
  auto rosenbrock = [=](auto& ctx) -> Status {
    const auto x = ctx.Input("x")[0];
    const auto y = ctx.Input("y")[0];
    const double av = ctx.inputs()[a], bv = ctx.inputs()[b];
    TESS_ASSIGN_OR_RETURN(auto result, ctx.Output("result", {}));
    result[0] = (av - x) * (av - x) + bv * (y - x * x) * (y - x * x);
    return Status::OK();
  };
  autodiff::Derive(c, rosenbrock, "Evaluates the Rosenbrock function at (x, y).");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeRosenbrock)
