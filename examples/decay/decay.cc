// decay: a "legacy" simulator with no derivative code, differentiable by
// finite differences (tesscpp/finite_differences.h). Explicit Euler steps of
// du/dt = -rate·u for several species; jacobian, JVP and VJP come from
// DeriveByFiniteDifferences. The algorithm is read from $DECAY_FD_ALGORITHM
// (central, forward or stochastic; default central), so that one build serves
// the tests of all three against tests/fixtures/python/decay, its Python twin
// on tesseract-core's finite-difference helpers.
#include <cstdlib>
#include <string>

#include "tesscpp/component.h"
#include "tesscpp/finite_differences.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

FiniteDifferences OptionsFromEnvironment() {
  FiniteDifferences fd{.eps = 1e-6, .seed = 7};
  const char* algorithm = std::getenv("DECAY_FD_ALGORITHM");
  const std::string name = algorithm != nullptr ? algorithm : "central";
  fd.algorithm = name == "forward"      ? FdAlgorithm::kForward
                 : name == "stochastic" ? FdAlgorithm::kStochastic
                                        : FdAlgorithm::kCentral;
  return fd;
}

Component MakeDecay() {
  Component c("decay", "0.1.0", "Species decaying at their own rates, by explicit Euler steps.\n");
  auto u0 = c.inputs().Array<double>("u0", {kAnyDim}, {.differentiable = true, .doc = "Initial amounts."});
  auto rates = c.inputs().Array<double>("rates", {kAnyDim}, {.differentiable = true, .doc = "Decay rates."});
  auto dt = c.inputs().Scalar<double>("dt", {.doc = "Time step.", .default_value = 0.1});
  auto steps = c.inputs().Scalar<int64_t>("steps", {.doc = "Number of steps.", .default_value = 10});
  auto u_out = c.outputs().Array<double>("u", {kAnyDim}, {.differentiable = true, .doc = "Final amounts."});
  auto total =
      c.outputs().Scalar<double>("total", {.differentiable = true, .doc = "Sum of the final amounts."});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        const auto u_in = in[u0].values();
        const auto r = in[rates].values();
        if (u_in.size() != r.size()) return Status::InvalidArgument("u0 and rates differ in length");
        TESS_ASSIGN_OR_RETURN(std::span<double> u,
                              out.NewArray<double>(u_out, {static_cast<int64_t>(u_in.size())}));
        std::copy(u_in.begin(), u_in.end(), u.begin());
        for (int64_t s = 0; s < in[steps]; ++s) {
          for (size_t i = 0; i < u.size(); ++i) u[i] = u[i] - in[dt] * r[i] * u[i];
        }
        TESS_ASSIGN_OR_RETURN(std::span<double> sum, out.NewArray<double>(total, {}));
        sum[0] = 0;
        for (double v : u) sum[0] += v;
        return Status::OK();
      },
      "Integrates the decay.");
  DeriveByFiniteDifferences(c, OptionsFromEnvironment());
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeDecay)
