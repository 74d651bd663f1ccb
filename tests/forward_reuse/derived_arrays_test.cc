// Forward reuse for a component whose derivatives are derived in the array
// form (tesscpp/autodiff_arrays.h, docs/forward-reuse.md): an apply asked to
// keep runs the function with its inputs watched and keeps Dr.Jit's graph of
// the run, and the VJP referring to it traverses that graph backward only.
// Counted from the component's own count of runs of its function; every
// answer compared byte for byte with the one computed without reuse.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "core/status_matchers.h"
#include "support/reuse_calls.h"
#include "tesscpp/autodiff_arrays.h"

namespace tesscpp {
namespace {

std::atomic<int> runs{0};  // runs of the function

// A replay runs a recorded call's kernels without running the function: the
// count of runs counts forward passes only when every call is traced.
const bool kEveryCallTraced = ::setenv("TESSCPP_DRJIT_REPLAY", "0", 1) == 0;

// Five explicit steps of u' = -u * u_x + nu * u_xx on a periodic grid, upwind
// by the sign of u, and the energy of the result: tests/forward_reuse/
// derived_test.cc's component, in the array form.
Component MakeSteps() {
  Component c("steps_array", "0.1.0", "Explicit steps, derived derivatives (array form).\n");
  c.inputs().Array<double>("u", {kAnyDim}, {.differentiable = true});
  c.inputs().Scalar<double>("nu", {.differentiable = true, .default_value = 0.05});
  c.outputs().Array<double>("u_next", {kAnyDim}, {.differentiable = true});
  c.outputs().Scalar<double>("energy", {.differentiable = true});
  autodiff::DeriveArrays(c, [](auto& ctx) -> Status {
    using Context = std::decay_t<decltype(ctx)>;
    using Float = typename Context::Float;
    using UInt32 = typename Context::UInt32;
    ++runs;
    Float u = ctx.Input("u");
    const Float& nu = ctx.Input("nu");
    const auto n = static_cast<uint32_t>(ctx.InputShape("u")[0]);
    const UInt32 size = ctx.Index(n), i = drjit::arange<UInt32>(n);
    const UInt32 left = drjit::select(i == 0u, size - 1u, i - 1u);
    const UInt32 right = drjit::select(i + 1u == size, UInt32(0u), i + 1u);
    const autodiff::Permutation<UInt32> to_left{left, right}, to_right{right, left};
    for (int step = 0; step < 5; ++step) {
      const auto [l, r] = autodiff::Permute(u, to_left, to_right);
      const Float adv = drjit::select(u > 0.0, u * (u - l), u * (r - u));
      u = u - 0.01 * adv + 0.01 * nu * (r - 2.0 * u + l);
    }
    TESS_RETURN_IF_ERROR(ctx.Output("u_next", u, {n}));
    return ctx.OutputSum("energy", 0.5 * u * u);
  });
  return c;
}

class DerivedArraysForwardReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(calls_, testing::ReuseCalls::Of(MakeSteps(), "derived_arrays_forward_reuse"));
  }

  std::unique_ptr<testing::ReuseCalls> calls_;
};

constexpr char kAt[] = R"({"u":[0.5,-0.25,1.0,0.75,-1.0,0.2],"nu":0.1})";
constexpr char kElsewhere[] = R"({"u":[0.4,-0.3,1.0,0.7,-1.0,0.1],"nu":0.1})";
constexpr char kBoth[] = R"(["energy","u_next"])";
constexpr char kCotangents[] = R"({"u_next":[1.0,0.5,-1.0,0.0,2.0,1.0],"energy":0.5})";
constexpr char kUNext[] = R"(["u_next"])";
constexpr char kUNextCotangent[] = R"({"u_next":[1.0,0.5,-1.0,0.0,2.0,1.0]})";

TEST_F(DerivedArraysForwardReuse, AStepRunsTheFunctionOnceAndAnswersAsWithout) {
  ASSERT_TRUE(kEveryCallTraced);
  const std::string plain_apply = calls_->Apply(kAt);
  const std::string plain_vjp = calls_->Vjp(kAt, kBoth, kCotangents);
  for (int round = 0; round < 3; ++round) {
    const int before = runs;
    const auto [apply, reference] = calls_->KeptApply(kAt);
    const std::string vjp = calls_->Vjp(kAt, kBoth, kCotangents, reference);
    EXPECT_EQ(runs - before, 1) << "round " << round;  // the kept apply's, never replayed
    EXPECT_EQ(apply, plain_apply);
    EXPECT_EQ(vjp, plain_vjp);
  }
}

TEST_F(DerivedArraysForwardReuse, OneGraphServesEveryVjpOfItsReference) {
  const std::string plain = calls_->Vjp(kAt, kBoth, kCotangents);
  const std::string plain_u_next = calls_->Vjp(kAt, kUNext, kUNextCotangent);
  const std::string plain_elsewhere = calls_->Vjp(kElsewhere, kBoth, kCotangents);
  const auto [apply, reference] = calls_->KeptApply(kAt);
  int before = runs;
  // Again and again, and with fewer outputs: each traversal leaves the graph
  // and clears the gradients it read.
  EXPECT_EQ(calls_->Vjp(kAt, kBoth, kCotangents, reference), plain);
  EXPECT_EQ(calls_->Vjp(kAt, kUNext, kUNextCotangent, reference), plain_u_next);
  EXPECT_EQ(calls_->Vjp(kAt, kBoth, kCotangents, reference), plain);
  EXPECT_EQ(runs - before, 0);
  // Two steps interleaved: each graph is its own.
  const auto [first_apply, first] = calls_->KeptApply(kAt);
  const auto [second_apply, second] = calls_->KeptApply(kElsewhere);
  before = runs;
  EXPECT_EQ(calls_->Vjp(kAt, kBoth, kCotangents, first), plain);
  EXPECT_EQ(calls_->Vjp(kElsewhere, kBoth, kCotangents, second), plain_elsewhere);
  EXPECT_EQ(runs - before, 0);
}

}  // namespace
}  // namespace tesscpp
