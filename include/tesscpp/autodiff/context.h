// context.h: what a scalar-form function sees (tesscpp/autodiff.h): its
// differentiable inputs as numbers of its scalar type, the whole input model,
// and the outputs it fills.
#pragma once

#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/model.h"
#include "tesscpp/result.h"

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

}  // namespace tesscpp::autodiff
