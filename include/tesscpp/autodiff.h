// autodiff.h: a component's derivative endpoints derived from one apply
// written generically over its scalar type (docs/autodiff.md).
//
//   struct Rosenbrock {
//     template <typename T>
//     tesscpp::Status operator()(tesscpp::autodiff::Context<T>& ctx) const {
//       const T x = ctx.Input("x")[0], y = ctx.Input("y")[0];
//       const double a = ctx.inputs()[a_key], b = ctx.inputs()[b_key];
//       TESS_ASSIGN_OR_RETURN(std::span<T> result, ctx.Output("result", {}));
//       result[0] = (a - x) * (a - x) + b * (y - x * x) * (y - x * x);
//       return tesscpp::Status::OK();
//     }
//   };
//   tesscpp::autodiff::Derive(component, Rosenbrock{...});  // after declaring the fields
//
// Derive registers apply (T = double), abstract_eval (apply on zeros of the
// given shapes), jacobian_vector_product (forward mode,
// Sacado's Fad numbers), vector_jacobian_product and jacobian (reverse and
// vector modes on an ADOL-C tape). Only the top-level fields declared
// differentiable take part; every other input is read through ctx.inputs().
// Branches may depend on values: a tape is reused for later calls with the same
// non-differentiable inputs only while every comparison it recorded still
// comes out the same (ADOL-C checks; otherwise the call is recorded again).
//
// Optional: include this header only in components that use it, and link the
// `tesscpp::autodiff` CMake target (ADOL-C and Sacado's headers, Debian's
// libadolc-dev and libtrilinos-sacado-dev).
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

#include "tesscpp/autodiff_fields.h"
#include "tesscpp/autodiff_tape.h"
#include "tesscpp/component.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff {

/// \brief What the generic apply sees: the differentiable inputs as numbers of
/// type T, the whole validated input model (inputs()), and the outputs it
/// fills.
template <typename T>
class Context : public internal::ContextBase<std::vector<T>> {
 public:
  using Base = internal::ContextBase<std::vector<T>>;
  using typename Base::Array;

  /// \brief A differentiable input's elements, row-major. Throws (the
  /// runtime answers 500 naming it) for a name that is not a differentiable
  /// top-level input: that is a mistake in the component.
  std::span<const T> Input(const std::string& name) const { return this->Find(name).values; }
  /// \brief The differentiable output `name` with the given shape, to fill
  /// (zeros at first). kInvalidArgument for a name that is not a
  /// differentiable top-level output, one given twice, or dims that are no
  /// shape.
  Result<std::span<T>> Output(const std::string& name, std::vector<int64_t> dims) {
    TESS_ASSIGN_OR_RETURN(Array * slot, this->NewOutput(name, std::move(dims)));
    slot->values.assign(static_cast<size_t>(internal::CountOf(slot->dims)), T(0.0));
    return std::span<T>(slot->values);
  }

  /// \brief For Derive.
  Context(const ModelView& model, std::map<std::string, Array> inputs, std::map<std::string, Dtype> outputs)
      : Base(model, std::move(inputs), std::move(outputs)) {}
};

namespace internal {

using Arrays = std::map<std::string, Context<double>::Array>;

// The differentiable inputs of `model`, as doubles (optional fields left out
// are absent).
inline Result<Arrays> ReadInputs(const Value& model, const std::map<std::string, Dtype>& fields) {
  Arrays inputs;
  for (const auto& [name, dtype] : fields) {
    const Value* value = model.as_dict().find(name);
    if (value == nullptr || !value->is_tensor()) continue;
    const Tensor& tensor = value->as_tensor();
    Context<double>::Array array;
    array.dims.assign(tensor.shape().dims().begin(), tensor.shape().dims().end());
    TESS_ASSIGN_OR_RETURN(array.values, ReadValues(tensor));
    inputs.emplace(name, std::move(array));
  }
  return inputs;
}

// `arrays` as numbers of type T, each field's made by make(name, values).
template <typename T, typename Make>
std::map<std::string, typename Context<T>::Array> Convert(const Arrays& arrays, Make make) {
  std::map<std::string, typename Context<T>::Array> converted;
  for (const auto& [name, array] : arrays) converted[name] = {array.dims, make(name, array.values)};
  return converted;
}

// Every taping and sweep holds the process's tape lock (autodiff_tape.h).
inline std::mutex& TapeLock() { return ProcessTapeSlot().lock; }
constexpr short kTape = 1;

// Numbers the functions Derive registers, for the tapes this library keeps.
inline uint64_t NextFunctionId() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}

// What recording a call on the tape leaves: the independents (input name,
// element) in tape order, the point they were recorded at, the shapes of the
// outputs made dependent and how many elements they hold.
struct Taped {
  std::vector<std::pair<std::string, int64_t>> independents;
  std::vector<double> point;
  std::map<std::string, std::vector<int64_t>> output_dims;
  int64_t dependents = 0;
};

// Records `fn` on the tape with every differentiable input independent and
// the outputs in `wanted` dependent (in that order, elements row-major).
// The caller holds TapeLock().
template <typename Fn>
Result<Taped> Tape(const Fn& fn, const ModelView& in, const std::map<std::string, Dtype>& input_fields,
                   const std::map<std::string, Dtype>& output_fields, const PathSet& wanted) {
  TESS_ASSIGN_OR_RETURN(const Arrays arrays, ReadInputs(in.value(), input_fields));
  Taped taped;
  trace_on(kTape, 1);  // keep the values for a reverse sweep right after
  auto inputs = Convert<adouble>(arrays, [&](const std::string& name, const std::vector<double>& values) {
    std::vector<adouble> independent(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      independent[i] <<= values[i];
      taped.independents.emplace_back(name, static_cast<int64_t>(i));
      taped.point.push_back(values[i]);
    }
    return independent;
  });
  Context<adouble> ctx(in, std::move(inputs), output_fields);
  const Status status = fn(ctx);
  for (const std::string& name : wanted) {
    auto found = ctx.outputs().find(name);
    if (found == ctx.outputs().end()) continue;
    taped.output_dims[name] = found->second.dims;
    for (adouble& y : found->second.values) {
      double value = 0;
      y >>= value;
      ++taped.dependents;
    }
  }
  trace_off();
  if (!status.ok()) return status;
  return taped;
}

// What a tape holds fixed: the inputs that are not differentiable (recorded
// as constants), the differentiable ones' shapes, and the outputs made
// dependent. A tape recorded under equal constants can be swept again at new
// values of the differentiable inputs.
struct TapeConstants {
  uint64_t function = 0;  // which Derive call: tapes of two components never mix
  Value fixed;
  std::map<std::string, std::vector<int64_t>> shapes;
  PathSet wanted;

  bool operator==(const TapeConstants&) const = default;

  // The fixed inputs as the call shares them: enough to compare with the
  // kept tape's, which holds its own copies (Owned).
  static TapeConstants Of(uint64_t function, const Value& model,
                          const std::map<std::string, Dtype>& input_fields, const PathSet& wanted) {
    TapeConstants constants{function, Value::Dict{}, {}, wanted};
    for (const auto& [name, value] : model.as_dict()) {
      if (input_fields.contains(name) && value.is_tensor()) {
        const auto dims = value.as_tensor().shape().dims();
        constants.shapes.emplace(name, std::vector<int64_t>(dims.begin(), dims.end()));
      } else {
        constants.fixed.as_dict().set(name, value);
      }
    }
    return constants;
  }

  // The same with the fixed arrays copied, for keeping: a caller's array
  // borrowed in place (an in-process numpy input) may change before the next
  // call. Copied only when a tape is recorded, not on every sweep.
  Result<TapeConstants> Owned() && {
    for (auto& [name, value] : fixed.as_dict()) {
      if (!value.is_tensor()) continue;
      const Tensor& shared = value.as_tensor();
      TESS_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(shared.dtype(), shared.shape()));
      std::copy(shared.bytes().begin(), shared.bytes().end(), copy.bytes().begin());
      value = Value(std::move(copy));
    }
    return std::move(*this);
  }
};

// The tape this library recorded last, what it holds fixed, and which
// recording of the process it was (guarded by TapeLock()).
struct KeptTape {
  std::optional<TapeConstants> constants;
  uint64_t recording = 0;
  Taped taped;
};
inline KeptTape& LastTape() {
  static auto* kept = new KeptTape();  // leaked: what it holds must not be freed after its pools at exit
  return *kept;
}

// A tape of `fn` at `in`'s point with the outputs in `wanted` dependent,
// ready for a reverse sweep. Recording costs several times a sweep, so the
// tape of the last call is swept forward to the new point when the constants
// are the same; ADOL-C's forward sweep checks every comparison the recording
// made, and a branch that would go the other way (it prints a warning) gets
// the call recorded again. The caller holds TapeLock(), and reads the
// answer (the kept tape, not a copy of its per-element index) under it.
template <typename Fn>
Result<const Taped*> TapeAt(uint64_t function, const Fn& fn, const ModelView& in,
                            const std::map<std::string, Dtype>& input_fields,
                            const std::map<std::string, Dtype>& output_fields, const PathSet& wanted) {
  TapeConstants constants = TapeConstants::Of(function, in.value(), input_fields, wanted);
  KeptTape& kept = LastTape();
  TapeSlot& slot = ProcessTapeSlot();
  if (kept.constants == constants && kept.recording == slot.recordings) {
    TESS_ASSIGN_OR_RETURN(const Arrays arrays, ReadInputs(in.value(), input_fields));
    std::vector<double> point;  // in recording order: by input name, then row-major
    point.reserve(kept.taped.point.size());
    for (const auto& [name, array] : arrays)
      point.insert(point.end(), array.values.begin(), array.values.end());
    const auto n = static_cast<int>(point.size());
    const auto m = static_cast<int>(kept.taped.dependents);
    std::vector<double> values(static_cast<size_t>(m));
    if (m == 0 || n == 0 || zos_forward(kTape, m, n, 1, point.data(), values.data()) >= 0) {
      kept.taped.point = std::move(point);
      return &kept.taped;
    }
  }
  kept.constants.reset();
  ++slot.recordings;  // the tape is overwritten whether or not the recording succeeds
  TESS_ASSIGN_OR_RETURN(Taped taped, Tape(fn, in, input_fields, output_fields, wanted));
  TESS_ASSIGN_OR_RETURN(TapeConstants owned, std::move(constants).Owned());
  kept = {std::move(owned), slot.recordings, std::move(taped)};
  return &kept.taped;
}

// `fn` in doubles at `in`: its outputs.
template <typename Fn>
Result<std::map<std::string, Context<double>::Array>> Evaluate(
    const Fn& fn, const ModelView& in, const std::map<std::string, Dtype>& input_fields,
    const std::map<std::string, Dtype>& output_fields) {
  TESS_ASSIGN_OR_RETURN(Arrays inputs, ReadInputs(in.value(), input_fields));
  Context<double> ctx(in, std::move(inputs), output_fields);
  TESS_RETURN_IF_ERROR(fn(ctx));
  return std::move(ctx.outputs());
}

}  // namespace internal

namespace internal {

// apply: the function on doubles.
template <typename Fn>
void DeriveApply(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                 const std::map<std::string, Dtype>& output_fields, const std::string& apply_doc) {
  if (!c.apply())
    c.Apply(
        [=](const ModelView& in, Record& out) -> Status {
          TESS_ASSIGN_OR_RETURN(auto outputs, internal::Evaluate(fn, in, input_fields, output_fields));
          for (auto& [name, array] : outputs) {
            TESS_ASSIGN_OR_RETURN(Tensor t,
                                  internal::ToTensor(array.values, array.dims, output_fields.at(name)));
            out.Set(FieldKey<ArrayOf<double>>{-1, name}, Value(std::move(t)));
          }
          return Status::OK();
        },
        apply_doc);
}

// abstract_eval: the function in doubles on zeros (autodiff_fields.h).
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

// vector_jacobian_product, by reverse mode on the kept tape.
template <typename Fn>
void DeriveVjp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
               const std::map<std::string, Dtype>& output_fields, uint64_t function) {
  // Reverse mode: one sweep with the cotangents as weights.
  if (!c.vector_jacobian_product())
    c.VectorJacobianProduct([=](const ModelView& in, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                                const TensorMap& cotangent, TensorMap& vjp) -> Status {
      std::lock_guard<std::mutex> lock(internal::TapeLock());
      TESS_ASSIGN_OR_RETURN(const internal::Taped* kept,
                            internal::TapeAt(function, fn, in, input_fields, output_fields, vjp_outputs));
      const internal::Taped& taped = *kept;
      const int64_t m = taped.dependents;
      std::vector<double> weights;
      for (const std::string& name : vjp_outputs) {
        if (!taped.output_dims.contains(name)) continue;
        TESS_ASSIGN_OR_RETURN(const std::vector<double> w, internal::ReadValues(cotangent.at(name)));
        weights.insert(weights.end(), w.begin(), w.end());
      }
      if (static_cast<int64_t>(weights.size()) != m) {
        return Status::InvalidArgument("autodiff: the cotangents hold ", weights.size(),
                                       " elements, the outputs ", m);
      }
      const auto n = static_cast<int>(taped.point.size());
      std::vector<double> gradient(taped.point.size(), 0.0);
      if (m > 0 && n > 0)
        fos_reverse(internal::kTape, static_cast<int>(m), n, weights.data(), gradient.data());
      std::map<std::string, std::vector<double>> by_input;
      for (size_t k = 0; k < taped.independents.size(); ++k) {
        by_input[taped.independents[k].first].push_back(gradient[k]);
      }
      for (const std::string& name : vjp_inputs) {
        const Value* value = in.value().as_dict().find(name);
        if (value == nullptr || !value->is_tensor()) continue;
        const auto dims = value->as_tensor().shape().dims();
        TESS_ASSIGN_OR_RETURN(
            Tensor t, internal::ToTensor(by_input[name], {dims.begin(), dims.end()}, input_fields.at(name)));
        vjp.insert_or_assign(name, std::move(t));
      }
      return Status::OK();
    });
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
      std::lock_guard<std::mutex> lock(internal::TapeLock());
      TESS_ASSIGN_OR_RETURN(const internal::Taped* kept,
                            internal::TapeAt(function, fn, in, input_fields, output_fields, jac_outputs));
      const internal::Taped& taped = *kept;
      const int64_t m = taped.dependents;
      const auto n = static_cast<int>(taped.point.size());
      std::vector<double> storage(static_cast<size_t>(m) * taped.point.size(), 0.0);
      std::vector<double*> rows(static_cast<size_t>(m));
      for (int64_t r = 0; r < m; ++r) rows[r] = storage.data() + r * n;
      if (m > 0 && n > 0) jacobian(internal::kTape, static_cast<int>(m), n, taped.point.data(), rows.data());
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

}  // namespace internal

/// \brief Registers apply, abstract_eval, jacobian, jacobian_vector_product and
/// vector_jacobian_product of `c` computed from `fn`, a callable with
/// `template <typename T> Status operator()(Context<T>&) const`. Call it
/// after declaring the fields and after registering any endpoint written by
/// hand: those are kept, the others derived.
template <typename Fn>
void Derive(Component& c, Fn fn, std::string apply_doc = "") {
  const auto input_fields = internal::DifferentiableFields(*c.input_schema());
  const auto output_fields = internal::DifferentiableFields(*c.output_schema());
  const uint64_t function = internal::NextFunctionId();  // names this fn's tapes
  internal::DeriveApply(c, fn, input_fields, output_fields, apply_doc);
  internal::DeriveAbstractEval(c, fn, input_fields, output_fields);
  internal::DeriveJvp(c, fn, input_fields, output_fields);
  internal::DeriveVjp(c, fn, input_fields, output_fields, function);
  internal::DeriveJacobian(c, fn, input_fields, output_fields, function);
}

}  // namespace tesscpp::autodiff
