// burgers_ad: explicit steps of the 1-D viscous Burgers equation on a periodic
// grid (upwind advection, central diffusion), written once, generically; all
// derivative endpoints are derived (tesscpp/autodiff.h).
#include <cmath>

#include "tesscpp/autodiff.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeBurgers() {
  Component c("burgers_ad", "0.1.0", "Explicit steps of the 1-D viscous Burgers equation.\n");
  c.inputs().Array<double>("u", {kAnyDim}, {.differentiable = true, .doc = "Velocity on a periodic grid."});
  c.inputs().Scalar<double>("nu", {.differentiable = true, .doc = "Viscosity.", .default_value = 0.05});
  auto dt = c.inputs().Scalar<double>("dt", {.doc = "Time step.", .default_value = 1e-4});
  auto dx = c.inputs().Scalar<double>("dx", {.doc = "Grid spacing.", .default_value = 1e-2});
  auto steps = c.inputs().Scalar<int64_t>("steps", {.doc = "Number of steps.", .default_value = 1});
  c.outputs().Array<double>("u_next", {kAnyDim},
                            {.differentiable = true, .doc = "Velocity after the steps."});
  c.outputs().Scalar<double>("energy", {.differentiable = true, .doc = "Kinetic energy after the steps."});

  auto burgers = [=](auto& ctx) -> Status {
    using T = typename std::decay_t<decltype(ctx.Input("u"))>::value_type;
    const auto u0 = ctx.Input("u");
    const T nu = ctx.Input("nu")[0];
    const double h = ctx.inputs()[dt], step = ctx.inputs()[dx];
    const int64_t n = static_cast<int64_t>(u0.size());
    if (n < 3) return Status::InvalidArgument("u needs at least 3 cells");
    std::vector<T> u(u0.begin(), u0.end()), next(u.size());
    for (int64_t s = 0; s < ctx.inputs()[steps]; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        const T& left = u[(i + n - 1) % n];
        const T& centre = u[i];
        const T& right = u[(i + 1) % n];
        // Upwind: the difference on the side the flow comes from.
        T advection = centre > 0.0 ? centre * (centre - left) / step : centre * (right - centre) / step;
        T diffusion = nu * (right - 2.0 * centre + left) / (step * step);
        next[i] = centre - h * advection + h * diffusion;
      }
      std::swap(u, next);
    }
    TESS_ASSIGN_OR_RETURN(auto out, ctx.Output("u_next", {n}));
    TESS_ASSIGN_OR_RETURN(auto energy, ctx.Output("energy", {}));
    for (int64_t i = 0; i < n; ++i) {
      out[i] = u[i];
      energy[0] += 0.5 * u[i] * u[i] * step;
    }
    return Status::OK();
  };
  autodiff::Derive(c, burgers,
                   "Advances u by `steps` explicit steps and returns it with its kinetic energy.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeBurgers)
