// permute_op.h: the custom Dr.Jit operation behind autodiff::Permute
// (internal to tesscpp/autodiff/permutation.h): a gather whose reverse is
// the gather by the inverse permutation.
#pragma once

#include <drjit/autodiff.h>
#include <drjit/custom.h>
#include <drjit/jit.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace tesscpp::autodiff::internal {

// The Dr.Jit operation behind Permute: one input, one output per
// permutation. It holds the input and outputs by their AD indices only (no
// values), as Dr.Jit's own drjit::CustomOp does, so that it keeps no array
// alive; Dr.Jit frees it with the last of its outputs.
template <typename Float, std::size_t N>
class PermuteOp final : public drjit::detail::CustomOpBase {
 public:
  using Values = drjit::detached_t<Float>;
  using Indices = drjit::uint32_array_t<Values>;

  PermuteOp(std::array<Indices, N> index, std::array<Indices, N> inverse)
      : index_(std::move(index)), inverse_(std::move(inverse)) {}

  // Registers `input` and `outputs` with Dr.Jit's AD graph; false where it
  // declines (the input's derivatives are off or suspended).
  bool Attach(const Float& input, std::array<Float, N>& outputs) {
    constexpr JitBackend kBackend = drjit::backend_v<Float>;
    if (!add_index(kBackend, input.index_ad(), true)) return false;
    input_ = Handle(input.index_ad());
    for (std::size_t k = 0; k < N; ++k) {
      outputs[k].new_grad_();
      add_index(kBackend, outputs[k].index_ad(), false);
      outputs_[k] = Handle(outputs[k].index_ad());
    }
    return ad_custom_op(this);
  }

  // Forward mode: the input's tangent gathered as the values were (nothing
  // where it has none).
  void forward() override {
    const Values tangent = Values::steal(ad_grad(input_.index_combined(), /*null_ok=*/true));
    if (!tangent.valid()) return;
    for (std::size_t k = 0; k < N; ++k) {
      const Values moved = drjit::gather<Values>(tangent, index_[k]);
      outputs_[k].accum_grad_(moved.index());
    }
  }

  // Reverse mode: each output's gradient gathered back by the inverse, the
  // sum added to the input's (outputs whose gradient never came add
  // nothing). The gradients are scheduled first: a gather evaluates its
  // source, and scheduled they are evaluated together, in one kernel, not
  // in one kernel each.
  void backward() override {
    std::array<Values, N> gradients;
    for (std::size_t k = 0; k < N; ++k) {
      gradients[k] = Values::steal(ad_grad(outputs_[k].index_combined(), /*null_ok=*/true));
      if (gradients[k].valid()) drjit::schedule(gradients[k]);
    }
    Values sum;
    for (std::size_t k = 0; k < N; ++k) {
      if (!gradients[k].valid()) continue;
      Values back = drjit::gather<Values>(gradients[k], inverse_[k]);
      sum = sum.valid() ? sum + back : std::move(back);
    }
    if (sum.valid()) input_.accum_grad_(sum.index());
    // The input's gradient, evaluated where it stands: in a time loop it is
    // where the next step back starts. Left lazy, it was an expression over
    // every later step's gradient, which each step back evaluated again
    // within its outputs' gradients: a VJP of 100 Burgers steps at 1e4
    // cells took 445 ms, 200 steps 2.4 s (quadratic and worse; now 5.3 and
    // 9.8 ms). A contribution that comes after (a use of the input made
    // before the permutation) adds to it as to any gradient.
    Values total = Values::steal(ad_grad(input_.index_combined(), /*null_ok=*/true));
    if (total.valid()) drjit::eval(total);
  }

  const char* name() const override { return "tesscpp::autodiff::Permute"; }

 private:
  // A reference to AD variable `ad_index` without its values.
  static Float Handle(uint32_t ad_index) { return Float::borrow(static_cast<uint64_t>(ad_index) << 32); }

  std::array<Indices, N> index_, inverse_;
  Float input_;
  std::array<Float, N> outputs_;
};

}  // namespace tesscpp::autodiff::internal
