// array_jacobian.h: the array form's jacobian, in blocks of output rows by
// input columns (internal to tesscpp/autodiff_arrays.h): one recording, swept
// once per input element or per output element, whichever is fewer.
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
#include "tesscpp/autodiff/detail/array_runs.h"
#include "tesscpp/autodiff/detail/array_tensors.h"
#include "tesscpp/autodiff/detail/drjit_process.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

// (row-major), for every requested pair.
struct Side {
  std::string name;
  std::vector<int64_t> dims;
  int64_t count = 0;
};
using Blocks = std::vector<std::vector<std::vector<double>>>;

template <typename A>
std::vector<Side> Sides(const A& arrays, const PathSet& names) {
  std::vector<Side> sides;
  for (const std::string& name : names) {
    auto found = arrays.find(name);
    if (found != arrays.end()) sides.push_back({name, found->second.dims, CountOf(found->second.dims)});
  }
  return sides;
}

inline Blocks ZeroBlocks(const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks(outs.size(), std::vector<std::vector<double>>(ins.size()));
  for (size_t o = 0; o < outs.size(); ++o)
    for (size_t i = 0; i < ins.size(); ++i)
      blocks[o][i].assign(static_cast<size_t>(outs[o].count * ins[i].count), 0.0);
  return blocks;
}

// A gradient (width 1 broadcast to `count`; summed for an output set by
// OutputSum) copied to the host.
template <typename Float>
std::vector<double> HostGradient(const Float& values, int64_t count, bool summed = false) {
  Float g = summed ? drjit::sum(drjit::grad(values)) : Widened(drjit::grad(values), count);
  drjit::eval(g);
  std::vector<double> host(static_cast<size_t>(count));
  if (count > 0) jit_memcpy(drjit::backend_v<Float>, host.data(), g.data(), host.size() * sizeof(double));
  return host;
}

// The unit vector e_k over the elements of `sides` in order, as one array
// for the side named `name` (nullopt when k lies in another side).
template <typename Float>
std::optional<Float> UnitOf(const std::vector<Side>& sides, const std::string& name, int64_t k) {
  for (const Side& side : sides) {
    if (side.name == name) {
      if (k < 0 || k >= side.count) return std::nullopt;
      std::vector<double> unit(static_cast<size_t>(side.count), 0.0);
      unit[static_cast<size_t>(k)] = 1.0;
      return Float::load_(unit.data(), unit.size());
    }
    k -= side.count;
  }
  return std::nullopt;
}

// Forward mode, fewer input elements than output elements: one pass per
// input element (the function run each time), a column of every block.
template <typename Float, typename Fn>
Result<Blocks> JacobianByColumns(const Fn& fn, const ModelView& in,
                                 const std::map<std::string, Dtype>& input_fields,
                                 const std::map<std::string, Dtype>& output_fields, const PathSet& jac_inputs,
                                 const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks = ZeroBlocks(ins, outs);
  // Read once (a host array goes to the device once); each pass seeds a copy.
  TESS_ASSIGN_OR_RETURN(const auto inputs, ReadArrays<Float>(in.value(), input_fields));
  int64_t offset = 0;  // of input i's elements among all of them
  for (size_t i = 0; i < ins.size(); offset += ins[i++].count) {
    for (int64_t col = 0; col < ins[i].count; ++col) {
      auto along = [&](const std::string& name, const auto&) -> Result<std::optional<Float>> {
        return UnitOf<Float>(ins, name, offset + col);
      };
      TESS_ASSIGN_OR_RETURN(auto ctx, ForwardPass<Float>(fn, in, inputs, output_fields, jac_inputs, along));
      for (size_t o = 0; o < outs.size(); ++o) {
        const std::vector<double> column = HostGradient(ctx.outputs().at(outs[o].name).values, outs[o].count,
                                                        ctx.summed().contains(outs[o].name));
        for (int64_t row = 0; row < outs[o].count; ++row)
          blocks[o][i][static_cast<size_t>(row * ins[i].count + col)] = column[static_cast<size_t>(row)];
      }
    }
  }
  return blocks;
}

// Reverse mode on `ctx`, a recording with the requested inputs watched: one
// backward traversal per output element (the edges kept, the gradients
// cleared), a row of every block.
template <typename Float>
Blocks JacobianByRows(ArrayContext<Float>& ctx, const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks = ZeroBlocks(ins, outs);
  int64_t k = 0;
  for (size_t o = 0; o < outs.size(); ++o) {
    for (int64_t row = 0; row < outs[o].count; ++row, ++k) {
      // Cleared first, then seeded: two outputs may be the same array (an
      // output and its OutputSum), and seeding one must not undo the other.
      for (const Side& out : outs) drjit::clear_grad(ctx.outputs().at(out.name).values);
      for (const Side& out : outs) {
        Float& values = ctx.outputs().at(out.name).values;
        if (const std::optional<Float> unit = UnitOf<Float>(outs, out.name, k))
          drjit::accum_grad(values, *unit);
        drjit::enqueue(drjit::ADMode::Backward, values);
      }
      drjit::traverse(drjit::ADMode::Backward, static_cast<uint32_t>(drjit::ADFlag::ClearVertices));
      for (size_t i = 0; i < ins.size(); ++i) {
        Float& values = ctx.inputs_by_name().at(ins[i].name).values;
        const std::vector<double> gradient = HostGradient(values, ins[i].count);
        std::copy(gradient.begin(), gradient.end(),
                  blocks[o][i].begin() + static_cast<std::ptrdiff_t>(row * ins[i].count));
        drjit::clear_grad(values);
      }
    }
  }
  return blocks;
}

// jacobian: by columns or by rows, whichever are fewer; its blocks leave in
// host memory (the jacobian is for checks and small problems, not the device
// path).
template <typename Fn>
void DeriveArrayJacobian(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                         const std::map<std::string, Dtype>& output_fields) {
  if (c.jacobian()) return;
  c.Jacobian([=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs,
                 JacobianMap& jac) -> Status {
    return OnBackend(CudaDeviceOf({}, in.value(), input_fields), [&]<typename Float>() -> Status {
      // One recording gives the shapes, and the rows where there are fewer
      // rows than columns.
      TESS_ASSIGN_OR_RETURN(auto ctx, Run<Float>(fn, in, input_fields, output_fields, Watch{jac_inputs}));
      const std::vector<Side> ins = Sides(ctx.inputs_by_name(), jac_inputs);
      const std::vector<Side> outs = Sides(ctx.outputs(), jac_outputs);
      int64_t n = 0, m = 0;
      for (const Side& side : ins) n += side.count;
      for (const Side& side : outs) m += side.count;
      Blocks blocks;
      if (n <= m) {
        TESS_ASSIGN_OR_RETURN(
            blocks, JacobianByColumns<Float>(fn, in, input_fields, output_fields, jac_inputs, ins, outs));
      } else {
        blocks = JacobianByRows(ctx, ins, outs);
      }
      for (size_t o = 0; o < outs.size(); ++o) {
        for (size_t i = 0; i < ins.size(); ++i) {
          std::vector<int64_t> dims = outs[o].dims;
          dims.insert(dims.end(), ins[i].dims.begin(), ins[i].dims.end());
          TESS_ASSIGN_OR_RETURN(Tensor t,
                                ToTensor(blocks[o][i], std::move(dims), output_fields.at(outs[o].name)));
          jac[outs[o].name].insert_or_assign(ins[i].name, std::move(t));
        }
      }
      return Status::OK();
    });
  });
}

}  // namespace tesscpp::autodiff::internal
