// array_context.h: what an array-form function sees (tesscpp/autodiff_arrays.h):
// its differentiable inputs as Dr.Jit arrays, the whole input model, kernel
// parameters, and the outputs it sets.
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

#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/autodiff/detail/replay.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff {

/// \brief What the array function sees: the differentiable inputs as Dr.Jit
/// arrays (flat, row-major; a scalar has width 1), the whole validated input
/// model (inputs()), and the outputs it sets.
template <typename FloatT>
class ArrayContext : public internal::ContextBase<FloatT> {
 public:
  using Base = internal::ContextBase<FloatT>;
  using typename Base::Array;
  using Float = FloatT;
  using UInt32 = drjit::uint32_array_t<Float>;
  using Mask = drjit::mask_t<Float>;

  /// \brief A differentiable input. Throws (the runtime answers 500 naming
  /// it) for a name that is not a differentiable top-level input: that is a
  /// mistake in the component.
  const Float& Input(const std::string& name) const { return this->Find(name).values; }
  /// \brief `value` as an opaque kernel parameter of width 1: a new value
  /// next call reuses the compiled kernel. In a recorded call it is kept in
  /// the recording's memory (internal::ParamSlots): a replay sets nothing.
  Float Param(double value) const { return Parameter<Float>(value); }
  /// \brief An index parameter (a size, a count), likewise.
  UInt32 Index(uint32_t value) const { return Parameter<UInt32>(value); }

  /// \brief Sets the differentiable output `name` to `values` with shape
  /// `dims` (row-major; width 1 is broadcast to the shape).
  /// kInvalidArgument for a name that is not a differentiable top-level
  /// output, one given twice, dims that are no shape, or a width that does
  /// not fit the shape.
  Status Output(const std::string& name, Float values, std::vector<int64_t> dims) {
    TESS_ASSIGN_OR_RETURN(Array * slot, this->NewOutput(name, std::move(dims)));
    const int64_t count = internal::CountOf(slot->dims);
    const auto width = static_cast<int64_t>(drjit::width(values));
    if (width != count && width != 1) {
      return Status::InvalidArgument("autodiff: output '", name, "' has ", width, " elements, its shape ",
                                     count);
    }
    slot->values = std::move(values);
    return Status::OK();
  }

  /// \brief Sets the scalar differentiable output `name` to the sum of
  /// `values` (any width). Prefer it to `Output(name, drjit::sum(values),
  /// {})`: Dr.Jit computes a sum where it is written, so the derivative
  /// endpoints, which never return an output's own value, would pay a kernel
  /// and a reduction for it. Here apply sums once the outputs are evaluated
  /// (`values` in the same kernel as the others of its width), a JVP sums
  /// only the tangent, and a VJP spreads the cotangent over `values`.
  /// kInvalidArgument as Output.
  Status OutputSum(const std::string& name, Float values) {
    TESS_ASSIGN_OR_RETURN(Array * slot, this->NewOutput(name, {}));
    slot->values = std::move(values);
    summed_.insert(name);
    return Status::OK();
  }

  /// \brief The outputs set by OutputSum: their arrays are what is summed.
  const std::set<std::string>& summed() const { return summed_; }

  /// \brief For DeriveArrays.
  ArrayContext(const ModelView& model, std::map<std::string, Array> inputs,
               std::map<std::string, Dtype> outputs)
      : Base(model, std::move(inputs), std::move(outputs)) {}

 private:
  template <typename Array, typename T>
  static Array Parameter(T value) {
    if (auto* slots = internal::ParamSlots<Float>::Current()) {
      if (auto slot = slots->Take(value)) return Array(*std::move(slot));
    }
    return drjit::opaque<Array>(value);
  }

  std::set<std::string> summed_;
};

}  // namespace tesscpp::autodiff
