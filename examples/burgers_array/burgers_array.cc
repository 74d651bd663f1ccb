// burgers_array: examples/burgers_ad written over whole arrays with Dr.Jit
// (tesscpp/autodiff_arrays.h): the same fields and the same explicit steps of
// the 1-D viscous Burgers equation, with the periodic neighbours read by
// permutation (autodiff::Permute) and a select for the upwind branch; all
// derivative endpoints are derived.
#include "tesscpp/autodiff_arrays.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeBurgers() {
  Component c("burgers_array", "0.1.0", "Explicit steps of the 1-D viscous Burgers equation (array form).\n");
  c.inputs().Array<double>("u", {kAnyDim}, {.differentiable = true, .doc = "Velocity on a periodic grid."});
  c.inputs().Scalar<double>("nu", {.differentiable = true, .doc = "Viscosity.", .default_value = 0.05});
  auto dt = c.inputs().Scalar<double>("dt", {.doc = "Time step.", .default_value = 1e-4});
  auto dx = c.inputs().Scalar<double>("dx", {.doc = "Grid spacing.", .default_value = 1e-2});
  auto steps = c.inputs().Scalar<int64_t>("steps", {.doc = "Number of steps.", .default_value = 1});
  c.outputs().Array<double>("u_next", {kAnyDim},
                            {.differentiable = true, .doc = "Velocity after the steps."});
  c.outputs().Scalar<double>("energy", {.differentiable = true, .doc = "Kinetic energy after the steps."});

  auto burgers = [=](auto& ctx) -> Status {
    using Context = std::decay_t<decltype(ctx)>;
    using Float = typename Context::Float;
    using UInt32 = typename Context::UInt32;
    Float u = ctx.Input("u");
    const Float& nu = ctx.Input("nu");
    const auto n = static_cast<uint32_t>(ctx.InputShape("u")[0]);
    if (n < 3) return Status::InvalidArgument("u needs at least 3 cells");
    // Every value that differs between calls is a kernel parameter, so one
    // compiled kernel serves every grid size, step and spacing.
    const Float h = ctx.Param(ctx.inputs()[dt]), step = ctx.Param(ctx.inputs()[dx]);
    // The periodic neighbours by select, not `%`: integer division has no
    // vector instruction, and two of them per cell tripled the apply.
    const UInt32 size = ctx.Index(n), i = drjit::arange<UInt32>(n);
    const UInt32 left = drjit::select(i == 0u, size - 1u, i - 1u);
    const UInt32 right = drjit::select(i + 1u == size, UInt32(0u), i + 1u);
    // The neighbours as permutations with their inverses (a shift left is
    // undone by a shift right): autodiff::Permute reads them by gather, and
    // its reverse mode gathers too, where drjit::gather's would scatter-add.
    // The time loop is C++: Dr.Jit records each step, and its reverse mode
    // goes back through all of them.
    const autodiff::Permutation<UInt32> to_left{left, right}, to_right{right, left};
    for (int64_t s = 0; s < ctx.inputs()[steps]; ++s) {
      const auto [l, r] = autodiff::Permute(u, to_left, to_right);  // l[i] = u[i - 1], r[i] = u[i + 1]
      // Upwind: the difference on the side the flow comes from.
      const Float advection = drjit::select(u > 0.0, u * (u - l) / step, u * (r - u) / step);
      const Float diffusion = nu * (r - 2.0 * u + l) / (step * step);
      u = u - h * advection + h * diffusion;
    }
    TESS_RETURN_IF_ERROR(ctx.Output("u_next", u, {n}));
    // Summed by the context rather than drjit::sum here: a sum is computed
    // where it is written, and the derivatives never need its value.
    return ctx.OutputSum("energy", 0.5 * u * u * step);
  };
  autodiff::DeriveArrays(c, burgers,
                         "Advances u by `steps` explicit steps and returns it with its kinetic energy.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeBurgers)
