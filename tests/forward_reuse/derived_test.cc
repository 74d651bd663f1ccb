// Forward reuse for a component whose derivatives are derived
// (tesscpp/autodiff.h, docs/forward-reuse.md): an apply asked to keep runs its
// forward pass on the ADOL-C tape, and the VJP referring to it sweeps back
// only. Counted from the library's own count of forward passes; every answer
// compared byte for byte with the one computed without reuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status_matchers.h"
#include "support/reuse_calls.h"
#include "tesscpp/autodiff.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp {
namespace {

// A few explicit steps of u' = -u * u_x + nu * u_xx on a periodic grid, with
// a branch on the sign of u (upwinding), and the energy of the result.
Component MakeSteps() {
  Component c("steps", "0.1.0", "Explicit steps, derived derivatives.\n");
  c.inputs().Array<double>("u", {kAnyDim}, {.differentiable = true});
  c.inputs().Scalar<double>("nu", {.differentiable = true, .default_value = 0.05});
  c.outputs().Array<double>("u_next", {kAnyDim}, {.differentiable = true});
  c.outputs().Scalar<double>("energy", {.differentiable = true});
  autodiff::Derive(c, [](auto& ctx) -> Status {
    using T = typename std::decay_t<decltype(ctx.Input("u"))>::value_type;
    const auto u0 = ctx.Input("u");
    const T nu = ctx.Input("nu")[0];
    const auto n = static_cast<int64_t>(u0.size());
    std::vector<T> u(u0.begin(), u0.end()), next(u.size());
    for (int step = 0; step < 5; ++step) {
      for (int64_t i = 0; i < n; ++i) {
        const T& l = u[(i + n - 1) % n];
        const T& r = u[(i + 1) % n];
        const T adv = u[i] > 0.0 ? u[i] * (u[i] - l) : u[i] * (r - u[i]);
        next[i] = u[i] - 0.01 * adv + 0.01 * nu * (r - 2.0 * u[i] + l);
      }
      std::swap(u, next);
    }
    TESS_ASSIGN_OR_RETURN(auto out, ctx.Output("u_next", {n}));
    TESS_ASSIGN_OR_RETURN(auto energy, ctx.Output("energy", {}));
    for (int64_t i = 0; i < n; ++i) {
      out[i] = u[i];
      energy[0] += 0.5 * u[i] * u[i];
    }
    return Status::OK();
  });
  return c;
}

class DerivedForwardReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(calls_, testing::ReuseCalls::Of(MakeSteps(), "derived_forward_reuse"));
  }

  std::pair<std::string, std::string> KeptApply(const std::string& inputs) {
    return calls_->KeptApply(inputs);
  }
  std::string Vjp(const std::string& inputs, const std::string& outputs, const std::string& cotangent,
                  const std::string& reference = "") {
    return calls_->Vjp(inputs, outputs, cotangent, reference);
  }

  static uint64_t ForwardPasses() { return autodiff::internal::ProcessTapeSlot().forward_passes.load(); }

  std::unique_ptr<testing::ReuseCalls> calls_;
};

constexpr char kAt[] = R"({"u":[0.5,-0.25,1.0,0.75,-1.0,0.2],"nu":0.1})";
constexpr char kElsewhere[] = R"({"u":[0.4,-0.3,1.0,0.7,-1.0,0.1],"nu":0.1})";
constexpr char kBoth[] = R"(["energy","u_next"])";
constexpr char kCotangents[] = R"({"u_next":[1.0,0.5,-1.0,0.0,2.0,1.0],"energy":0.5})";

TEST_F(DerivedForwardReuse, AStepRunsOneForwardPassAndAnswersAsWithout) {
  // Without reuse, twice: the first records the tapes, the second is a step
  // as it costs in a training loop (the apply on doubles, the VJP a forward
  // sweep of its kept tape, then the reverse one).
  std::string plain_apply, plain_vjp;
  for (int round = 0; round < 2; ++round) {
    const uint64_t before = ForwardPasses();
    plain_apply = calls_->Apply(kAt);
    plain_vjp = Vjp(kAt, kBoth, kCotangents);
    EXPECT_EQ(ForwardPasses() - before, 2u);
  }
  for (int round = 0; round < 2; ++round) {
    const uint64_t before = ForwardPasses();
    const auto [apply, reference] = KeptApply(kAt);
    const std::string vjp = Vjp(kAt, kBoth, kCotangents, reference);
    EXPECT_EQ(ForwardPasses() - before, 1u) << "round " << round;  // the apply's, on the tape
    EXPECT_EQ(apply, plain_apply);
    EXPECT_EQ(vjp, plain_vjp);
  }
}

TEST_F(DerivedForwardReuse, AVjpOfFewerOutputsWeighsTheOthersZero) {
  const std::string plain = Vjp(kAt, R"(["u_next"])", R"({"u_next":[1.0,0.5,-1.0,0.0,2.0,1.0]})");
  const auto [apply, reference] = KeptApply(kAt);
  const uint64_t before = ForwardPasses();
  EXPECT_EQ(Vjp(kAt, R"(["u_next"])", R"({"u_next":[1.0,0.5,-1.0,0.0,2.0,1.0]})", reference), plain);
  EXPECT_EQ(ForwardPasses() - before, 0u);
}

TEST_F(DerivedForwardReuse, APassOverTheTapeSinceMakesTheVjpSweepForwardAgain) {
  const std::string plain = Vjp(kAt, kBoth, kCotangents);
  const std::string plain_elsewhere = Vjp(kElsewhere, kBoth, kCotangents);

  // A second VJP on one reference: the first read the forward's values up.
  const auto [apply, reference] = KeptApply(kAt);
  EXPECT_EQ(Vjp(kAt, kBoth, kCotangents, reference), plain);
  uint64_t before = ForwardPasses();
  EXPECT_EQ(Vjp(kAt, kBoth, kCotangents, reference), plain);
  EXPECT_EQ(ForwardPasses() - before, 1u);

  // Two steps interleaved: the second apply's pass comes between the first
  // apply and its VJP.
  const auto [first_apply, first] = KeptApply(kAt);
  const auto [second_apply, second] = KeptApply(kElsewhere);
  before = ForwardPasses();
  EXPECT_EQ(Vjp(kAt, kBoth, kCotangents, first), plain);
  EXPECT_EQ(ForwardPasses() - before, 1u);
  EXPECT_EQ(Vjp(kElsewhere, kBoth, kCotangents, second), plain_elsewhere);
}

}  // namespace
}  // namespace tesscpp
