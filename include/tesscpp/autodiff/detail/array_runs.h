// array_runs.h: one run of the array function (internal to
// tesscpp/autodiff_arrays.h): on the backend the call's arrays live on, with
// what each derivation prepares (gradients enabled, tangents set), and the
// results stored into tensors.
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
#include "tesscpp/autodiff/detail/array_tensors.h"
#include "tesscpp/autodiff/detail/drjit_process.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

// The function run once on `inputs` (the differentiable arrays): its context
// (inputs, outputs) for the caller to differentiate. `prepare` runs on the
// inputs before the function sees them (enabling gradients, setting tangents).
template <typename Float, typename Fn, typename Prepare>
Result<ArrayContext<Float>> RunOn(const Fn& fn, const ModelView& in, Arrays<Float> inputs,
                                  const std::map<std::string, Dtype>& output_fields, Prepare prepare) {
  // The function's reads through ctx.inputs() are noted: a differentiable
  // input read there is what a replay key does not cover (UncoveredReads).
  FieldReads reads;
  ArrayContext<Float> ctx(ModelView(in.value(), &reads), std::move(inputs), output_fields);
  TESS_RETURN_IF_ERROR(prepare(ctx.inputs_by_name()));
  const Status done = fn(ctx);
  int index = 0;
  for (const auto& [name, field] : in.value().as_dict()) {
    if (reads.Read(index++) && ctx.inputs_by_name().contains(name)) UncoveredReads::Note();
  }
  TESS_RETURN_IF_ERROR(done);
  return ctx;
}

// RunOn the model's own differentiable arrays.
template <typename Float, typename Fn, typename Prepare>
Result<ArrayContext<Float>> Run(const Fn& fn, const ModelView& in,
                                const std::map<std::string, Dtype>& input_fields,
                                const std::map<std::string, Dtype>& output_fields, Prepare prepare) {
  TESS_ASSIGN_OR_RETURN(auto inputs, ReadArrays<Float>(in.value(), input_fields));
  return RunOn<Float>(fn, in, std::move(inputs), output_fields, prepare);
}

// The arrays a recorded call reads: the differentiable inputs, then the
// tangents or cotangents.
template <typename Float>
std::vector<Float*> RecordedInputs(Arrays<Float>& inputs, std::map<std::string, Float>* vectors = nullptr) {
  std::vector<Float*> all;
  for (auto& [name, array] : inputs) all.push_back(&array.values);
  if (vectors != nullptr) {
    for (auto& [name, array] : *vectors) all.push_back(&array);
  }
  return all;
}

// Named arrays as tensors of their fields' dtypes, into `into`: into the
// tensor of `ahead` with the array's name where there is one (made by
// Destinations for the same field, so of its shape; no copy where the array
// is that tensor's memory), into a new one otherwise.
template <typename Float>
Status StoreTensors(const NamedArrays<Float>& arrays, const std::map<std::string, Dtype>& fields,
                    TensorMap& into, TensorMap ahead = {}) {
  for (const auto& [name, array] : arrays) {
    auto given = ahead.find(name);
    if (given != ahead.end()) {
      CopyInto(array.values, given->second);
      into.insert_or_assign(name, std::move(given->second));
      continue;
    }
    TESS_ASSIGN_OR_RETURN(Tensor t, ToTensor(array.values, array.dims, fields.at(name)));
    into.insert_or_assign(name, std::move(t));
  }
  return Status::OK();
}

// The tensors a VJP's products go into (the requested inputs' shapes and
// dtypes), made before its kernels are queued, float64 ones written by the
// products' last kernel itself:
// - Each is mapped as an array the recording takes as an input; WriteInto
//   scatters the product into it and makes that array the product, so the
//   recording outputs it and a replay writes that call's tensor in place.
//   Evaluated into Dr.Jit's memory instead, a product was copied into the
//   tensor: 7.2 µs of GPU time and a launch at 1e6 cells on the H100, and
//   a synchronous memcpy on the CPU. The array must be an output: scattered
//   into an input that is not, a replay wrote elsewhere (the heap, on the
//   CPU).
// - Made first: on the GPU the device pool synchronises the device when it
//   hands out memory again (its last user's work may still be queued), which
//   then waits for an idle GPU, not for this call's kernels.
// float32 products (converted) and empty ones are copied as before.
template <typename Float>
class Destinations {
 public:
  static Result<Destinations> Make(const Arrays<Float>& inputs, const PathSet& names,
                                   const std::map<std::string, Dtype>& fields) {
    Destinations made;
    for (const std::string& name : names) {
      auto found = inputs.find(name);
      if (found == inputs.end()) continue;
      TESS_ASSIGN_OR_RETURN(Tensor tensor, NewTensor<Float>(found->second.dims, fields.at(name)));
      if (tensor.dtype() == Dtype::kFloat64 && tensor.num_elements() > 0) {
        made.mapped_.emplace(name,
                             Float::map_(tensor.data(), static_cast<size_t>(tensor.num_elements()), false));
      }
      made.tensors_.insert_or_assign(name, std::move(tensor));
    }
    return made;
  }

  /// \brief Adds the mapped tensors to a recording's inputs.
  void AppendTo(std::vector<Float*>& recorded) {
    for (auto& [name, array] : mapped_) recorded.push_back(&array);
  }

  /// \brief Writes each product that has a mapped tensor into it (with the
  /// next evaluation), the written array taking the product's place.
  void WriteInto(NamedArrays<Float>& products) {
    for (auto& [name, product] : products) {
      auto found = mapped_.find(name);
      if (found == mapped_.end()) continue;
      const auto n = static_cast<uint32_t>(drjit::width(found->second));
      drjit::scatter(found->second, product.values, drjit::arange<drjit::uint32_array_t<Float>>(n));
      product.values = found->second;
    }
  }

  /// \brief The tensors, for StoreTensors.
  TensorMap Tensors() && { return std::move(tensors_); }

 private:
  TensorMap tensors_;
  std::map<std::string, Float> mapped_;
};

struct NoPreparation {
  template <typename A>
  Status operator()(A&) const {
    return Status::OK();
  }
};

// Runs `body.template operator()<Float>()` on the backend the call's arrays
// live on: the CUDA backend (on their device) when any of them is a CUDA
// array, the CPU backend otherwise.
template <typename Body>
Status OnBackend(std::optional<int> cuda_device, Body body) {
  StartDrJit();
  if (!cuda_device) {
    Status status = body.template operator()<CpuFloat>();
    jit_sync_thread();  // kernels that write answered tensors in place have run
    return status;
  }
  if (jit_has_backend(JitBackend::CUDA) == 0) {
    return Status::Unavailable("autodiff: CUDA arrays arrived, but Dr.Jit found no usable CUDA device");
  }
  jit_cuda_set_device(*cuda_device);
  Status status = body.template operator()<CudaFloat>();
  jit_sync_thread();  // nothing of this call still runs on Dr.Jit's stream
  return status;
}

// `values` as the array of `dims` it stands for: widened (see Widened), or
// left as it is for an output set by OutputSum (`summed`), which Summed sums.
template <typename Float>
Float Shaped(Float values, const std::vector<int64_t>& dims, bool summed) {
  return summed ? values : Widened(std::move(values), CountOf(dims));
}

// `arrays` with those named in `summed` (outputs set by OutputSum) reduced to
// their sums, after evaluating all of them together: arrays of one width in
// one kernel, rather than each sum's operand in a kernel of its own.
template <typename Float>
NamedArrays<Float> Summed(NamedArrays<Float> arrays, const std::set<std::string>& summed) {
  if (summed.empty()) return arrays;
  for (auto& [name, array] : arrays) drjit::schedule(array.values);
  drjit::eval();
  for (auto& [name, array] : arrays) {
    if (summed.contains(name)) array.values = drjit::sum(array.values);
  }
  return arrays;
}

// The gradients of `arrays` named in `names` (names not there are skipped),
// detached and shaped: the inputs' after a backward pass (zeros where an
// input does not reach the outputs), the outputs' after a forward one
// (`summed`: those set by OutputSum).
template <typename Float>
NamedArrays<Float> GradientArrays(Arrays<Float>& arrays, const PathSet& names,
                                  const std::set<std::string>& summed = {}) {
  NamedArrays<Float> gradients;
  for (const std::string& name : names) {
    auto found = arrays.find(name);
    if (found == arrays.end()) continue;
    const Field<Float>& array = found->second;
    gradients.emplace_back(
        name, Field<Float>{array.dims, Shaped(drjit::grad(array.values), array.dims, summed.contains(name))});
  }
  return Summed(std::move(gradients), summed);
}

// Enables gradients on the requested inputs.
struct Watch {
  const PathSet& names;
  template <typename A>
  Status operator()(A& inputs) const {
    for (const std::string& name : names) {
      auto input = inputs.find(name);
      if (input != inputs.end()) drjit::enable_grad(input->second.values);
    }
    return Status::OK();
  }
};

}  // namespace tesscpp::autodiff::internal
