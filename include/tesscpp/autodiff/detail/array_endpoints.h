// array_endpoints.h: one derivation per endpoint of the array form (internal to
// tesscpp/autodiff_arrays.h): apply, abstract_eval, forward mode for
// jacobian_vector_product, reverse mode for vector_jacobian_product.
#pragma once

#include <dlfcn.h>
#include <drjit/autodiff.h>
#include <drjit/jit.h>
#include <drjit/math.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/array_context.h"
#include "tesscpp/autodiff/detail/array_kept.h"
#include "tesscpp/autodiff/detail/array_runs.h"
#include "tesscpp/autodiff/detail/array_tensors.h"
#include "tesscpp/autodiff/detail/drjit_process.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

template <typename Fn>
void DeriveArrayApply(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                      const std::map<std::string, Dtype>& output_fields, const std::string& apply_doc) {
  if (c.apply()) return;
  c.Apply(
      [=, replays = std::make_shared<Replays>()](const ModelView& in, Record& out) -> Status {
        return OnBackend(CudaDeviceOf({}, in.value(), input_fields), [&]<typename Float>() -> Status {
          CallReader<Float> reader;
          TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields));
          auto& inputs = read.inputs;
          // A kept run is traced (a replay holds no graph to traverse back),
          // so only a call that would be traced anyway keeps: a replayed
          // apply and VJP cost less than a traced kept run and its traversal
          // at small sizes (docs/forward-reuse.md §1).
          std::optional<Value> key = ModelKey(in.value(), input_fields);
          if (KeepRequested() && Replays::TracedAnyway(key)) {
            return KeptApply<Float>(fn, in, std::move(inputs), output_fields, out);
          }
          auto body = [&]() -> Result<NamedArrays<Float>> {
            TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, inputs, output_fields, NoPreparation{}));
            return AnsweredOutputs(ctx);
          };
          TESS_ASSIGN_OR_RETURN(
              auto outputs, Replayed<Float>(*replays, std::move(key), RecordedInputs<Float>(inputs), body));
          return SetAnswer(outputs, output_fields, out).status();
        });
      },
      apply_doc);
}

template <typename Fn>
void DeriveArrayAbstractEval(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                             const std::map<std::string, Dtype>& output_fields) {
  // Only the outputs' dims are read: their arrays are never evaluated, so
  // no kernel runs.
  DeriveAbstractEvalBy(
      c, output_fields, [=](const ModelView& model) -> Result<std::map<std::string, std::vector<int64_t>>> {
        StartDrJit();
        TESS_ASSIGN_OR_RETURN(auto ctx,
                              Run<CpuFloat>(fn, model, input_fields, output_fields, NoPreparation{}));
        std::map<std::string, std::vector<int64_t>> dims;
        for (auto& [name, array] : ctx.outputs()) dims.emplace(name, array.dims);
        return dims;
      });
}

// One forward-mode pass: the function run with the inputs in `names`
// carrying `direction(name)` as their gradients, then one forward traversal.
// Nothing is cleared on the way: an output that feeds another output (u_next
// into the energy) is an interior vertex of the traversal, whose gradient
// Dr.Jit's default flags would clear before it is read. The recording goes
// with the returned context.
template <typename Float, typename Fn, typename Direction>
Result<ArrayContext<Float>> ForwardPass(const Fn& fn, const ModelView& in, Arrays<Float> inputs,
                                        const std::map<std::string, Dtype>& output_fields,
                                        const PathSet& names, Direction direction) {
  auto seed = [&](Arrays<Float>& seeded) -> Status {
    for (const std::string& name : names) {
      auto input = seeded.find(name);
      if (input == seeded.end()) continue;
      TESS_ASSIGN_OR_RETURN(std::optional<Float> along, direction(name, input->second));
      if (!along) continue;
      drjit::enable_grad(input->second.values);
      drjit::set_grad(input->second.values, *along);
    }
    return Status::OK();
  };
  TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, std::move(inputs), output_fields, seed));
  for (const std::string& name : names) {
    auto input = ctx.inputs_by_name().find(name);
    if (input != ctx.inputs_by_name().end()) drjit::enqueue(drjit::ADMode::Forward, input->second.values);
  }
  drjit::traverse(drjit::ADMode::Forward, static_cast<uint32_t>(drjit::ADFlag::ClearNone));
  return ctx;
}

// jacobian_vector_product: the requested inputs carry their tangents, one
// forward pass.
template <typename Fn>
void DeriveArrayJvp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                    const std::map<std::string, Dtype>& output_fields) {
  if (c.jacobian_vector_product()) return;
  c.JacobianVectorProduct([=, replays = std::make_shared<Replays>()](
                              const ModelView& in, const PathSet& jvp_inputs, const PathSet& jvp_outputs,
                              const TensorMap& tangent, TensorMap& jvp) -> Status {
    return OnBackend(CudaDeviceOf({&tangent}, in.value(), input_fields), [&]<typename Float>() -> Status {
      CallReader<Float> reader;
      TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields, tangent));
      auto& [inputs, tangents] = read;
      auto along = [&](const std::string& name, const auto&) -> Result<std::optional<Float>> {
        auto t = tangents.find(name);
        return t == tangents.end() ? std::optional<Float>() : std::optional<Float>(t->second);
      };
      auto body = [&]() -> Result<NamedArrays<Float>> {
        TESS_ASSIGN_OR_RETURN(auto ctx, ForwardPass<Float>(fn, in, inputs, output_fields, jvp_inputs, along));
        return GradientArrays<Float>(ctx.outputs(), jvp_outputs, ctx.summed());
      };
      TESS_ASSIGN_OR_RETURN(
          auto products,
          Replayed<Float>(*replays, DerivativeKey(in.value(), input_fields, jvp_inputs, jvp_outputs, tangent),
                          RecordedInputs<Float>(inputs, &tangents), body));
      return StoreTensors(products, output_fields, jvp);
    });
  });
}

// vector_jacobian_product: the requested outputs carry the cotangents as
// gradients, one reverse traversal.
template <typename Fn>
void DeriveArrayVjp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                    const std::map<std::string, Dtype>& output_fields) {
  if (c.vector_jacobian_product()) return;
  c.VectorJacobianProduct([=, replays = std::make_shared<Replays>()](
                              const ModelView& in, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                              const TensorMap& cotangent, TensorMap& vjp) -> Status {
    return OnBackend(CudaDeviceOf({&cotangent}, in.value(), input_fields), [&]<typename Float>() -> Status {
      CallReader<Float> reader;
      TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields, cotangent));
      auto& [inputs, weights] = read;
      // What an apply at these inputs kept: the reverse traversal only.
      if (auto kept = Kept<KeptArrayRun<Float>>()) {
        return StoreTensors(kept->Reverse(vjp_inputs, vjp_outputs, weights), input_fields, vjp);
      }
      TESS_ASSIGN_OR_RETURN(auto destinations, Destinations<Float>::Make(inputs, vjp_inputs, input_fields));
      auto body = [&]() -> Result<NamedArrays<Float>> {
        TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, inputs, output_fields, Watch{vjp_inputs}));
        for (const std::string& name : vjp_outputs) {
          auto found = ctx.outputs().find(name);
          auto w = weights.find(name);
          if (found == ctx.outputs().end() || w == weights.end()) continue;
          // Accumulated: two outputs may be the same array.
          drjit::accum_grad(found->second.values, w->second);
          drjit::enqueue(drjit::ADMode::Backward, found->second.values);
        }
        drjit::traverse(drjit::ADMode::Backward);
        NamedArrays<Float> products = GradientArrays<Float>(ctx.inputs_by_name(), vjp_inputs);
        destinations.WriteInto(products);
        return products;
      };
      std::vector<Float*> recorded = RecordedInputs<Float>(inputs, &weights);
      destinations.AppendTo(recorded);
      TESS_ASSIGN_OR_RETURN(auto products, Replayed<Float>(*replays,
                                                           DerivativeKey(in.value(), input_fields, vjp_inputs,
                                                                         vjp_outputs, cotangent),
                                                           recorded, body));
      return StoreTensors(products, input_fields, vjp, std::move(destinations).Tensors());
    });
  });
}

}  // namespace tesscpp::autodiff::internal
