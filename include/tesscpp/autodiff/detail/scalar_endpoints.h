// scalar_endpoints.h: one derivation per endpoint of the scalar form
// (internal to tesscpp/autodiff.h): apply, abstract_eval, forward mode with
// Sacado, reverse mode and the Jacobian with ADOL-C's tapes.
#pragma once

// Sacado's own headers, without the Trilinos configuration that would pull in
// Kokkos, Teuchos and MPI.
#ifndef TRILINOS_NO_CONFIG_H
#define TRILINOS_NO_CONFIG_H
#endif
#include <adolc/adolc.h>
#include <Sacado_No_Kokkos.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/context.h"
#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/autodiff/detail/scalar_tapes.h"
#include "tesscpp/autodiff/detail/tape.h"
#include "tesscpp/component.h"
#include "tesscpp/forward_reuse.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

// The values of a pass over the tape as the outputs they are (`wanted`'s
// order, as recorded).
inline std::map<std::string, Context<double>::Array> TapedOutputs(const Taped& taped, const PathSet& wanted) {
  std::map<std::string, Context<double>::Array> outputs;
  auto next = taped.values.begin();
  for (const std::string& name : wanted) {
    auto dims = taped.output_dims.find(name);
    if (dims == taped.output_dims.end()) continue;
    const auto count = static_cast<std::ptrdiff_t>(CountOf(dims->second));
    outputs[name] = {dims->second, std::vector<double>(next, next + count)};
    next += count;
  }
  return outputs;
}

// The outputs, cast to their fields' dtypes, into `out`.
inline Status SetOutputs(const std::map<std::string, Context<double>::Array>& outputs,
                         const std::map<std::string, Dtype>& output_fields, Record& out) {
  for (const auto& [name, array] : outputs) {
    TESS_ASSIGN_OR_RETURN(Tensor t, internal::ToTensor(array.values, array.dims, output_fields.at(name)));
    out.Set(FieldKey<ArrayOf<double>>{-1, name}, Value(std::move(t)));
  }
  return Status::OK();
}

// apply: the function on doubles; asked to keep its forward
// (tesscpp/forward_reuse.h), a forward pass over the tape instead, whose
// values the VJP at these inputs then sweeps back without a forward pass.
template <typename Fn>
void DeriveApply(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                 const std::map<std::string, Dtype>& output_fields, const std::string& apply_doc,
                 uint64_t function) {
  if (!c.apply())
    c.Apply(
        [=](const ModelView& in, Record& out) -> Status {
          if (KeepRequested()) {
            PathSet wanted;
            for (const auto& [name, dtype] : output_fields) wanted.push_back(name);
            const auto lock = internal::LockedTape();
            TESS_ASSIGN_OR_RETURN(const internal::Taped* taped,
                                  internal::TapeAt(function, fn, in, input_fields, output_fields, wanted));
            TESS_RETURN_IF_ERROR(SetOutputs(TapedOutputs(*taped, wanted), output_fields, out));
            const TapeSlot& slot = ProcessTapeSlot();
            KeepForDerivatives(std::make_shared<const SweptForward>(
                                   SweptForward{function, LastTape().recording, slot.sweeps}),
                               sizeof(SweptForward));
            return Status::OK();
          }
          TESS_ASSIGN_OR_RETURN(auto outputs, internal::Evaluate(fn, in, input_fields, output_fields));
          return SetOutputs(outputs, output_fields, out);
        },
        apply_doc);
}

// abstract_eval: the function in doubles on zeros (detail/fields.h).
template <typename Fn>
void DeriveAbstractEval(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                        const std::map<std::string, Dtype>& output_fields) {
  DeriveAbstractEvalBy(
      c, output_fields, [=](const ModelView& model) -> Result<std::map<std::string, std::vector<int64_t>>> {
        TESS_ASSIGN_OR_RETURN(auto outputs, internal::Evaluate(fn, model, input_fields, output_fields));
        std::map<std::string, std::vector<int64_t>> dims;
        for (auto& [name, array] : outputs) dims.emplace(name, std::move(array.dims));
        return dims;
      });
}

// jacobian_vector_product, by forward mode.
template <typename Fn>
void DeriveJvp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
               const std::map<std::string, Dtype>& output_fields) {
  // Forward mode: one tangent direction, the requested inputs seeded with
  // their tangents, the others constant.
  if (!c.jacobian_vector_product())
    c.JacobianVectorProduct([=](const ModelView& in, const PathSet& jvp_inputs, const PathSet& jvp_outputs,
                                const TensorMap& tangent, TensorMap& jvp) -> Status {
      using Fad = Sacado::Fad::SFad<double, 1>;
      TESS_ASSIGN_OR_RETURN(const internal::Arrays arrays, internal::ReadInputs(in.value(), input_fields));
      // Tangents of the requested inputs; the others are constants.
      std::map<std::string, std::vector<double>> seeds;
      for (const std::string& name : jvp_inputs) {
        auto t = tangent.find(name);
        if (t == tangent.end()) continue;
        TESS_ASSIGN_OR_RETURN(seeds[name], internal::ReadValues(t->second));
      }
      auto inputs =
          internal::Convert<Fad>(arrays, [&](const std::string& name, const std::vector<double>& values) {
            const auto seed = seeds.find(name);
            std::vector<Fad> numbers;
            numbers.reserve(values.size());
            for (size_t i = 0; i < values.size(); ++i) {
              numbers.emplace_back(1, 0, values[i]);
              numbers.back().fastAccessDx(0) =
                  seed != seeds.end() && i < seed->second.size() ? seed->second[i] : 0.0;
            }
            return numbers;
          });
      Context<Fad> ctx(in, std::move(inputs), output_fields);
      TESS_RETURN_IF_ERROR(fn(ctx));
      for (const std::string& name : jvp_outputs) {
        auto found = ctx.outputs().find(name);
        if (found == ctx.outputs().end()) continue;
        std::vector<double> values;
        for (const Fad& y : found->second.values) values.push_back(y.dx(0));
        TESS_ASSIGN_OR_RETURN(Tensor t,
                              internal::ToTensor(values, found->second.dims, output_fields.at(name)));
        jvp.insert_or_assign(name, std::move(t));
      }
      return Status::OK();
    });
}

// The cotangents as weights of the tape's dependents (`wanted`, in order); an
// output the tape has but the call does not ask about (`asked`) weighs zero.
inline Result<std::vector<double>> DependentWeights(const Taped& taped, const PathSet& wanted,
                                                    const PathSet& asked, const TensorMap& cotangent) {
  std::vector<double> weights;
  for (const std::string& name : wanted) {
    auto dims = taped.output_dims.find(name);
    if (dims == taped.output_dims.end()) continue;
    auto w = cotangent.find(name);
    if (w == cotangent.end() || std::find(asked.begin(), asked.end(), name) == asked.end()) {
      weights.resize(weights.size() + static_cast<size_t>(CountOf(dims->second)), 0.0);
      continue;
    }
    TESS_ASSIGN_OR_RETURN(const std::vector<double> values, internal::ReadValues(w->second));
    weights.insert(weights.end(), values.begin(), values.end());
  }
  if (static_cast<int64_t>(weights.size()) != taped.dependents) {
    return Status::InvalidArgument("autodiff: the cotangents hold ", weights.size(),
                                   " elements, the outputs ", taped.dependents);
  }
  return weights;
}

// `per_independent` (one number per independent of the tape) cut by input,
// for the inputs `names`, in their shapes and dtypes.
inline Status ByInput(const ModelView& in, const Taped& taped, const std::vector<double>& per_independent,
                      const PathSet& names, const std::map<std::string, Dtype>& input_fields,
                      TensorMap& out) {
  std::map<std::string, std::vector<double>> by_input;
  for (size_t k = 0; k < taped.independents.size(); ++k) {
    by_input[taped.independents[k].first].push_back(per_independent[k]);
  }
  for (const std::string& name : names) {
    const Value* value = in.value().as_dict().find(name);
    if (value == nullptr || !value->is_tensor()) continue;
    const auto dims = value->as_tensor().shape().dims();
    TESS_ASSIGN_OR_RETURN(
        Tensor t, internal::ToTensor(by_input[name], {dims.begin(), dims.end()}, input_fields.at(name)));
    out.insert_or_assign(name, std::move(t));
  }
  return Status::OK();
}

// vector_jacobian_product, by reverse mode on the kept tape: one reverse
// sweep after the forward pass of a kept apply at these inputs
// (DeriveApply), after a forward pass of its own otherwise.
template <typename Fn>
void DeriveVjp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
               const std::map<std::string, Dtype>& output_fields, uint64_t function) {
  // Reverse mode: one sweep with the cotangents as weights.
  if (!c.vector_jacobian_product())
    c.VectorJacobianProduct([=](const ModelView& in, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                                const TensorMap& cotangent, TensorMap& vjp) -> Status {
      const auto lock = internal::LockedTape();
      const auto swept = Kept<SweptForward>();
      const internal::Taped* kept = nullptr;
      PathSet wanted = vjp_outputs;  // the tape's dependents, in order
      if (swept != nullptr && swept->Current(function, LastTape())) {
        kept = &LastTape().taped;
        wanted = LastTape().constants->wanted;
      } else {
        TESS_ASSIGN_OR_RETURN(kept,
                              internal::TapeAt(function, fn, in, input_fields, output_fields, vjp_outputs));
      }
      const internal::Taped& taped = *kept;
      TESS_ASSIGN_OR_RETURN(std::vector<double> weights,
                            DependentWeights(taped, wanted, vjp_outputs, cotangent));
      const auto n = static_cast<int>(taped.point.size());
      std::vector<double> gradient(taped.point.size(), 0.0);
      ++ProcessTapeSlot().sweeps;  // reads up the forward pass's values
      if (taped.dependents > 0 && n > 0)
        fos_reverse(internal::TapeTag(), static_cast<int>(taped.dependents), n, weights.data(),
                    gradient.data());
      return ByInput(in, taped, gradient, vjp_inputs, input_fields, vjp);
    });
}

// hessian_vector_product (tesscpp's), forward over reverse on the tape.
template <typename Fn>
void DeriveHvp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
               const std::map<std::string, Dtype>& output_fields, uint64_t function) {
  // Forward over reverse on the tape: ADOL-C's lagra_hess_vec, a first-order
  // forward sweep along the tangent (inputs outside hvp_inputs held fixed),
  // then a second-order reverse sweep with the cotangents as weights.
  if (!c.hessian_vector_product())
    c.HessianVectorProduct(
        [=](const ModelView& in, const PathSet& hvp_inputs, const PathSet& hvp_outputs,
            const TensorMap& tangent, const TensorMap& cotangent, TensorMap& hvp) -> Status {
          const auto lock = internal::LockedTape();
          TESS_ASSIGN_OR_RETURN(const internal::Taped* kept,
                                internal::TapeAt(function, fn, in, input_fields, output_fields, hvp_outputs));
          const internal::Taped& taped = *kept;
          TESS_ASSIGN_OR_RETURN(std::vector<double> weights,
                                DependentWeights(taped, hvp_outputs, hvp_outputs, cotangent));
          std::map<std::string, std::vector<double>> along;
          for (const std::string& name : hvp_inputs) {
            auto v = tangent.find(name);
            if (v == tangent.end()) continue;
            TESS_ASSIGN_OR_RETURN(along[name], internal::ReadValues(v->second));
          }
          std::vector<double> direction(taped.point.size(), 0.0);
          for (size_t k = 0; k < taped.independents.size(); ++k) {
            const auto& [name, element] = taped.independents[k];
            auto v = along.find(name);
            if (v != along.end()) direction[k] = v->second.at(static_cast<size_t>(element));
          }
          std::vector<double> point = taped.point;  // the driver takes non-const pointers
          std::vector<double> product(taped.point.size(), 0.0);
          ++ProcessTapeSlot().sweeps;  // overwrites the values a kept apply's VJP would read
          if (taped.dependents > 0 && !point.empty()) {
            const int rc = lagra_hess_vec(internal::TapeTag(), static_cast<int>(taped.dependents),
                                          static_cast<int>(point.size()), point.data(), direction.data(),
                                          weights.data(), product.data());
            if (rc < 0) return Status::Internal("autodiff: ADOL-C's lagra_hess_vec returned ", rc);
          }
          return ByInput(in, taped, product, hvp_inputs, input_fields, hvp);
        },
        "Derived: forward over reverse on the ADOL-C tape (ADOL-C's lagra_hess_vec).");
}

// jacobian, by ADOL-C's driver on the kept tape.
template <typename Fn>
void DeriveJacobian(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                    const std::map<std::string, Dtype>& output_fields, uint64_t function) {
  // Jacobian: ADOL-C's driver (forward vector mode when there are fewer
  // inputs than outputs, reverse otherwise), then cut into blocks.
  if (!c.jacobian())
    c.Jacobian([=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs,
                   JacobianMap& jac) -> Status {
      const auto lock = internal::LockedTape();
      TESS_ASSIGN_OR_RETURN(const internal::Taped* kept,
                            internal::TapeAt(function, fn, in, input_fields, output_fields, jac_outputs));
      const internal::Taped& taped = *kept;
      const int64_t m = taped.dependents;
      const auto n = static_cast<int>(taped.point.size());
      std::vector<double> storage(static_cast<size_t>(m) * taped.point.size(), 0.0);
      std::vector<double*> rows(static_cast<size_t>(m));
      for (int64_t r = 0; r < m; ++r) rows[r] = storage.data() + r * n;
      ++ProcessTapeSlot().sweeps;  // the driver's own passes
      if (m > 0 && n > 0)
        jacobian(internal::TapeTag(), static_cast<int>(m), n, taped.point.data(), rows.data());
      int64_t row = 0;
      for (const std::string& out_name : jac_outputs) {
        auto dims = taped.output_dims.find(out_name);
        if (dims == taped.output_dims.end()) continue;
        int64_t out_count = 1;
        for (int64_t d : dims->second) out_count *= d;
        for (const std::string& in_name : jac_inputs) {
          const Value* value = in.value().as_dict().find(in_name);
          if (value == nullptr || !value->is_tensor()) continue;
          std::vector<int64_t> block_dims = dims->second;
          for (int64_t d : value->as_tensor().shape().dims()) block_dims.push_back(d);
          std::vector<double> block;
          for (int64_t r = 0; r < out_count; ++r) {
            for (size_t k = 0; k < taped.independents.size(); ++k) {
              if (taped.independents[k].first == in_name) block.push_back(rows[row + r][k]);
            }
          }
          TESS_ASSIGN_OR_RETURN(Tensor t,
                                internal::ToTensor(block, std::move(block_dims), output_fields.at(out_name)));
          jac[out_name].insert_or_assign(in_name, std::move(t));
        }
        row += out_count;
      }
      return Status::OK();
    });
}

}  // namespace tesscpp::autodiff::internal
