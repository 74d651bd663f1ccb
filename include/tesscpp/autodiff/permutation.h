// permutation.h: gathers by permutations whose inverses are known,
// differentiated by gathers both ways (docs/autodiff.md, "Neighbours by
// permutation"). For tesscpp/autodiff_arrays.h, which includes it.
//
// drjit::gather(x, index) is differentiable for any index, and so its reverse
// is a scatter-add of the gradient into x's: atomic adds, one per element, and
// on the CPU compare-and-swap loops on doubles. Where the index is a
// permutation (the periodic neighbours of a grid, a transpose, a reordering),
// the reverse is a gather by the inverse permutation: no atomics, no zeroed
// buffer, and the gather fuses into the kernel that reads the gradient. Dr.Jit
// is told an index is a permutation by ReduceMode::Permute, but then reverses
// the gather by a plain scatter, which needs its target zeroed and evaluated
// and overwrites the gradient x has from its other uses (docs/autodiff.md);
// the inverse it cannot know. The author knows both, and says so with a
// Permutation. Measured on the Burgers step
// (bench/results/autodiff-20261205-permute.md).
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

#include "tesscpp/autodiff/detail/permute_op.h"

namespace tesscpp::autodiff {

/// \brief A permutation of n elements and its inverse, as index arrays of
/// width n: a gather by `index` moves element index[i] to i, and a gather by
/// `inverse` moves it back (index[inverse[j]] == j for every j). A wrong
/// inverse gives wrong derivatives, never an error: `tesscpp
/// check-gradients` finds it. Made inside the function (from
/// drjit::arange and ctx.Index, as the example does): an array evaluated
/// outside it and kept between calls is not an input of a recorded call,
/// so such a call is traced every time instead of replayed.
template <typename UInt32>
struct Permutation {
  UInt32 index;
  UInt32 inverse;
};

/// \brief `x` gathered by each permutation: result k is x[perms_k.index[i]].
/// Equal to drjit::gather's, with derivatives that gather too: the reverse
/// mode gathers each result's gradient by the inverse and sums, where
/// drjit::gather's would scatter-add. All results of one call share one
/// evaluation of their gradients, so the neighbours of one array are best
/// taken in one call. Inside Dr.Jit's symbolic constructs (drjit::while_loop,
/// if_stmt, calls) the results are drjit::gather's: there the custom
/// operation's reverse leaves its accumulation unevaluated and Dr.Jit refuses
/// the traversal (docs/autodiff.md, "Branches"). Throws
/// std::invalid_argument (the runtime answers 500) where a permutation's
/// arrays are not as wide as `x`.
///
///   const UInt32 left = ..., right = ...;  // periodic neighbours' indices
///   const auto [l, r] = autodiff::Permute(u, Permutation<UInt32>{left, right},
///                                         Permutation<UInt32>{right, left});
template <typename Float, typename UInt32, typename... More>
std::array<Float, 1 + sizeof...(More)> Permute(const Float& x, const Permutation<UInt32>& first,
                                               const More&... more) {
  constexpr std::size_t kCount = 1 + sizeof...(More);
  using Op = internal::PermuteOp<Float, kCount>;
  const std::array<const Permutation<UInt32>*, kCount> perms{&first, &more...};
  const std::size_t n = drjit::width(x);
  for (std::size_t k = 0; k < kCount; ++k) {
    if (drjit::width(perms[k]->index) != n || drjit::width(perms[k]->inverse) != n) {
      throw std::invalid_argument("autodiff::Permute: permutation " + std::to_string(k) + " has " +
                                  std::to_string(drjit::width(perms[k]->index)) + " and " +
                                  std::to_string(drjit::width(perms[k]->inverse)) + " elements, the array " +
                                  std::to_string(n));
    }
  }
  std::array<Float, kCount> out;
  if (drjit::grad_enabled(x) && jit_flag(JitFlag::SymbolicScope) != 0) {
    for (std::size_t k = 0; k < kCount; ++k) out[k] = drjit::gather<Float>(x, perms[k]->index);
    return out;
  }
  std::array<typename Op::Indices, kCount> index, inverse;
  const auto values = drjit::detach<false>(x);
  for (std::size_t k = 0; k < kCount; ++k) {
    index[k] = drjit::detach<false>(perms[k]->index);
    inverse[k] = drjit::detach<false>(perms[k]->inverse);
    out[k] = Float(drjit::gather<typename Op::Values>(values, index[k]));
  }
  if (!drjit::grad_enabled(x)) return out;
  nanobind::ref<Op> op = new Op(std::move(index), std::move(inverse));
  if (!op->Attach(x, out)) {
    for (Float& o : out) drjit::disable_grad(o);
  }
  return out;
}

}  // namespace tesscpp::autodiff
