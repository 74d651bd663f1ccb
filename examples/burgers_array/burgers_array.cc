// burgers_array: examples/burgers_ad written over whole arrays with Dr.Jit
// (tesscpp/autodiff_arrays.h): the same fields and the same explicit steps of
// the 1-D viscous Burgers equation, with neighbours read by scatter (CPU) or
// gather (GPU) and a select for the upwind branch; all derivative endpoints
// are derived.
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
    // The time loop is C++: Dr.Jit records each step (its reverse mode goes
    // back through all of them). The neighbours are read one way per backend;
    // both read the same values, and their reverses differ:
    // - CPU: each cell is placed into its neighbours' arrays by scatter
    //   (Permute: every element written exactly once), whose reverse is a
    //   plain gather. A gather's reverse would be a scatter-add, which
    //   Dr.Jit's CPU backend does with compare-and-swap loops on doubles.
    // - GPU: each cell gathers its neighbours. The gathers fuse into the
    //   step's kernel, and their reverse, a scatter-add, is one atomic add
    //   per element in the gradient's kernel; scatters would need arrays
    //   zeroed and evaluated between kernels, each way.
    for (int64_t s = 0; s < ctx.inputs()[steps]; ++s) {
      Float l, r;
      if constexpr (drjit::backend_v<Float> == JitBackend::CUDA) {
        l = drjit::gather<Float>(u, left);   // l[i] = u[i - 1]
        r = drjit::gather<Float>(u, right);  // r[i] = u[i + 1]
      } else {
        l = drjit::zeros<Float>(n);
        r = drjit::zeros<Float>(n);
        drjit::scatter(l, u, right, true, ReduceMode::Permute);  // l[i + 1] = u[i]
        drjit::scatter(r, u, left, true, ReduceMode::Permute);   // r[i - 1] = u[i]
      }
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
