// array_kept.h: forward reuse for the array form (internal to
// tesscpp/autodiff_arrays.h; docs/forward-reuse.md): an apply asked to keep
// runs the function with every differentiable input watched and keeps the
// run, its evaluated forward with Dr.Jit's graph of it; the VJP at the same
// inputs then traverses that graph backward only.
#pragma once

#include <drjit/autodiff.h>
#include <drjit/jit.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tesscpp/autodiff/array_context.h"
#include "tesscpp/autodiff/detail/array_runs.h"
#include "tesscpp/autodiff/detail/drjit_process.h"
#include "tesscpp/component.h"
#include "tesscpp/forward_reuse.h"

namespace tesscpp::autodiff::internal {

// The outputs an apply answers: detached, shaped, sums of OutputSum's taken.
template <typename Float>
NamedArrays<Float> AnsweredOutputs(ArrayContext<Float>& ctx) {
  NamedArrays<Float> outputs;
  for (auto& [name, array] : ctx.outputs()) {
    outputs.emplace_back(name, Field<Float>{array.dims, Shaped(drjit::detach(array.values), array.dims,
                                                               ctx.summed().contains(name))});
  }
  return Summed(std::move(outputs), ctx.summed());
}

// Sets the apply's answer from `outputs` (AnsweredOutputs'); its bytes.
template <typename Float>
Result<int64_t> SetAnswer(const NamedArrays<Float>& outputs, const std::map<std::string, Dtype>& fields,
                          Record& out) {
  int64_t bytes = 0;
  for (const auto& [name, array] : outputs) {
    TESS_ASSIGN_OR_RETURN(Tensor t, ToTensor(array.values, array.dims, fields.at(name)));
    bytes += t.nbytes();
    out.Set(FieldKey<ArrayOf<double>>{-1, name}, Value(std::move(t)));
  }
  return bytes;
}

// One kept run. Its graph serves any number of VJPs: each traversal leaves
// the edges (ADFlag::ClearVertices) and clears the inputs' gradients after
// reading them, one VJP at a time.
template <typename Float>
class KeptArrayRun {
 public:
  explicit KeptArrayRun(ArrayContext<Float> ctx) : ctx_(std::move(ctx)) {}

  // The VJP's products for `weights` (cotangents by output name), evaluated.
  // What a traversal that failed half way left is cleared (a scope guard), so
  // that the next VJP on this run starts from zero gradients.
  NamedArrays<Float> Reverse(const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                             const std::map<std::string, Float>& weights) const {
    std::lock_guard lock(mutex_);
    const ClearedAfter cleared{ctx_};
    for (const std::string& name : vjp_outputs) {
      auto found = ctx_.outputs().find(name);
      auto w = weights.find(name);
      if (found == ctx_.outputs().end() || w == weights.end()) continue;
      drjit::accum_grad(found->second.values, w->second);  // accumulated: two outputs may be one array
      drjit::enqueue(drjit::ADMode::Backward, found->second.values);
    }
    drjit::traverse(drjit::ADMode::Backward, +drjit::ADFlag::ClearVertices);
    NamedArrays<Float> products = GradientArrays<Float>(ctx_.inputs_by_name(), vjp_inputs);
    for (auto& [name, product] : products) drjit::schedule(product.values);
    drjit::eval();
    return products;
  }

 private:
  struct ClearedAfter {
    ArrayContext<Float>& ctx;
    ~ClearedAfter() {
      for (auto& [name, array] : ctx.outputs()) drjit::clear_grad(array.values);
      for (auto& [name, array] : ctx.inputs_by_name()) drjit::clear_grad(array.values);
    }
  };

  mutable std::mutex mutex_;
  mutable ArrayContext<Float> ctx_;  // its model view is the apply's, never read again
};

// A copy of `values` in memory of its own: a kept run outlives the request
// whose memory ToArray maps.
template <typename Float>
Float OwnedCopy(const Float& values) {
  using Detached = drjit::detached_t<Float>;
  return Float(Detached::steal(jit_var_copy_opaque(drjit::detach(values).index())));
}

// apply, asked to keep: the function run once on copies of the inputs, every
// differentiable one watched; the outputs answered and the run kept. Counted
// at what Dr.Jit newly took from the system during the run (its watermark
// includes its cache of freed memory, which a warm process reuses), and at
// least at the input copies and the outputs.
template <typename Float, typename Fn>
Status KeptApply(const Fn& fn, const ModelView& in, Arrays<Float> inputs,
                 const std::map<std::string, Dtype>& output_fields, Record& out) {
  PathSet watched;
  int64_t held = 0;
  for (auto& [name, array] : inputs) {
    array.values = OwnedCopy(array.values);
    watched.push_back(name);
    held += static_cast<int64_t>(drjit::width(array.values) * sizeof(double));
  }
  auto taken = [] { return static_cast<int64_t>(jit_malloc_watermark(drjit::backend_v<Float>)); };
  jit_malloc_clear_statistics();
  const int64_t before = taken();
  TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, std::move(inputs), output_fields, Watch{watched}));
  TESS_ASSIGN_OR_RETURN(const int64_t answered, SetAnswer(AnsweredOutputs(ctx), output_fields, out));
  const int64_t bytes = std::max(held + answered, taken() - before);
  KeepForDerivatives(std::make_shared<const KeptArrayRun<Float>>(std::move(ctx)), kOnCuda<Float> ? 0 : bytes,
                     kOnCuda<Float> ? bytes : 0);
  return Status::OK();
}

}  // namespace tesscpp::autodiff::internal
