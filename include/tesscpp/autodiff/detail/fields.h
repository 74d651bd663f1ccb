// fields.h: what the two authoring forms of derived derivatives
// share (tesscpp/autodiff.h, scalar code; tesscpp/autodiff_arrays.h, array
// code): which fields take part, tensors to and from doubles, and abstract_eval
// derived by running the function on zeros. Needs no autodiff library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/component.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"
#include "tesscpp/shape.h"

namespace tesscpp::autodiff::internal {

// The number of elements of an array of `dims` (validated ones: inputs'
// shapes, outputs' dims checked by NewOutput).
inline int64_t CountOf(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

/// \brief A differentiable field's shape and its elements, row-major (a
/// vector of numbers for the scalar form, one Dr.Jit array for the array
/// form).
template <typename Values>
struct Field {
  std::vector<int64_t> dims;
  Values values;
};

/// \brief What the contexts of both forms hold: the validated input model,
/// the differentiable inputs by name, the declared differentiable outputs and
/// those the function has set.
template <typename Values>
class ContextBase {
 public:
  using Array = Field<Values>;

  /// \brief A differentiable input's shape (empty for a scalar).
  const std::vector<int64_t>& InputShape(const std::string& name) const { return Find(name).dims; }
  /// \brief All inputs as validated, for the non-differentiable ones.
  const ModelView& inputs() const { return model_; }

  /// \name For the Derive functions.
  /// @{
  std::map<std::string, Array>& inputs_by_name() { return inputs_; }
  std::map<std::string, Array>& outputs() { return outputs_; }
  /// @}

 protected:
  ContextBase(const ModelView& model, std::map<std::string, Array> inputs,
              std::map<std::string, Dtype> outputs)
      : model_(model), inputs_(std::move(inputs)), declared_outputs_(std::move(outputs)) {}

  // Throws (the runtime answers 500 naming it) for a name that is not a
  // differentiable top-level input: that is a mistake in the component.
  const Array& Find(const std::string& name) const {
    auto found = inputs_.find(name);
    if (found == inputs_.end()) {
      throw std::invalid_argument("autodiff: '" + name + "' is not a differentiable top-level input");
    }
    return found->second;
  }

  // The slot of output `name`, new, with its dims: kInvalidArgument for a
  // name that is not a differentiable top-level output, one given twice, or
  // dims that are no shape (a negative or overflowing extent).
  Result<Array*> NewOutput(const std::string& name, std::vector<int64_t> dims) {
    if (!declared_outputs_.contains(name)) {
      return Status::InvalidArgument("autodiff: '", name, "' is not a differentiable top-level output");
    }
    // The component's mistake, not the request's: not a validation error (422).
    if (Result<Shape> shape = Shape::Make(dims); !shape.ok()) {
      return Status::InvalidArgument("autodiff: output '", name, "': ", shape.status().message());
    }
    auto [it, fresh] = outputs_.try_emplace(name);
    if (!fresh) return Status::InvalidArgument("autodiff: output '", name, "' was created twice");
    it->second.dims = std::move(dims);
    return &it->second;
  }

 private:
  ModelView model_;
  std::map<std::string, Array> inputs_;
  std::map<std::string, Dtype> declared_outputs_;
  std::map<std::string, Array> outputs_;
};

// The differentiable top-level fields of a model, with their dtypes.
inline std::map<std::string, Dtype> DifferentiableFields(const ModelSchema& schema) {
  std::map<std::string, Dtype> fields;
  for (const FieldSchema& field : schema.fields()) {
    if (field.type.differentiable() && field.type.dtype()) fields.emplace(field.name, *field.type.dtype());
  }
  return fields;
}

inline Result<double> Element(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case Dtype::kFloat64: return tensor.data_as<double>()[i];
    case Dtype::kFloat32: return static_cast<double>(tensor.data_as<float>()[i]);
    default: return Status::InvalidArgument("autodiff: differentiable arrays must be float32 or float64");
  }
}

// A tensor of `dtype` and `dims` holding `values` (float32 rounds).
inline Result<Tensor> ToTensor(const std::vector<double>& values, std::vector<int64_t> dims, Dtype dtype) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(std::move(dims)));
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == Dtype::kFloat32) {
      tensor.data_as<float>()[i] = static_cast<float>(values[i]);
    } else {
      tensor.data_as<double>()[i] = values[i];
    }
  }
  return tensor;
}

// A float32 or float64 tensor's elements as doubles.
inline Result<std::vector<double>> ReadValues(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    TESS_ASSIGN_OR_RETURN(values[i], Element(tensor, i));
  }
  return values;
}

// The top-level input fields that are arrays (scalars included), with their
// dtypes: abstract_eval gets their shapes and dtypes only.
inline std::map<std::string, Dtype> ArrayFields(const ModelSchema& schema) {
  std::map<std::string, Dtype> fields;
  for (const FieldSchema& field : schema.fields()) {
    if (field.type.dtype()) fields.emplace(field.name, *field.type.dtype());
  }
  return fields;
}

// A 0-d tensor of `dtype` holding `number` (a scalar field's default, which
// abstract_eval receives as given rather than as a shape and dtype).
inline Result<Tensor> ScalarTensor(const std::string& name, const Value& number, Dtype dtype) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make({}));
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape)));
  const double value = number.is_bool() ? static_cast<double>(number.as_bool()) : number.as_number();
  switch (dtype) {
    case Dtype::kFloat64: tensor.data_as<double>()[0] = value; break;
    case Dtype::kFloat32: tensor.data_as<float>()[0] = static_cast<float>(value); break;
    case Dtype::kInt64:
      // The double interval that converts to int64 without overflow.
      if (!(value >= -0x1p63 && value < 0x1p63))
        return Status::InvalidArgument("'", name, "': ", value, " is not an int64");
      tensor.data_as<int64_t>()[0] = static_cast<int64_t>(value);
      break;
    case Dtype::kInt32:
      if (!(value >= -0x1p31 && value < 0x1p31))
        return Status::InvalidArgument("'", name, "': ", value, " is not an int32");
      tensor.data_as<int32_t>()[0] = static_cast<int32_t>(value);
      break;
    case Dtype::kBool: tensor.data_as<bool>()[0] = value != 0.0; break;
    default:
      return Status::Unimplemented("autodiff: abstract_eval cannot pass the default of '", name, "' as ",
                                   DtypeName(dtype), "; write abstract_eval by hand");
  }
  return tensor;
}

// An abstract_eval input model made concrete: each array field's shape and
// dtype replaced by zeros of that shape and dtype, a scalar's default by that
// value, everything else as given.
inline constexpr int64_t kMaxAbstractEvalBytes = int64_t{1} << 30;

inline Result<Value> ZerosOf(const Value& abstract, const std::map<std::string, Dtype>& array_fields) {
  Value model = Value::Dict{};
  int64_t bytes = 0;
  for (const auto& [name, value] : abstract.as_dict()) {
    const auto field = array_fields.find(name);
    if (field == array_fields.end()) {
      model.as_dict().set(name, value);
    } else if (value.is_dict()) {
      const ShapeDType sd = AbstractModelView::ReadShapeDType(value);
      TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(sd.shape));
      // A few bytes of request could otherwise ask for any amount of memory.
      bytes += shape.num_elements() * ItemSize(sd.dtype);
      if (shape.num_elements() > kMaxAbstractEvalBytes || bytes > kMaxAbstractEvalBytes) {
        return Status::ResourceExhausted(
            "abstract_eval derived by evaluation runs the function on zeros of "
            "the given shapes, up to ",
            kMaxAbstractEvalBytes, " bytes in all; '", name,
            "' goes past that (write abstract_eval by hand for such shapes)");
      }
      TESS_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Allocate(sd.dtype, std::move(shape)));
      std::fill(zeros.bytes().begin(), zeros.bytes().end(), uint8_t{0});
      model.as_dict().set(name, Value(std::move(zeros)));
    } else if (value.is_number() || value.is_bool()) {
      TESS_ASSIGN_OR_RETURN(Tensor scalar, ScalarTensor(name, value, field->second));
      model.as_dict().set(name, Value(std::move(scalar)));
    } else {
      model.as_dict().set(name, value);
    }
  }
  return model;
}

// Registers abstract_eval (unless one is registered) where the inputs are
// flat: `evaluate(model)` runs the function on the model whose arrays are
// zeros of the requested shapes and returns each output's dims by name.
// Right wherever the shapes follow from the inputs' shapes alone; a function
// that refuses zeros needs an abstract_eval written by hand. A nested array
// would reach the function as a shape and dtype, not as an array, so inputs
// with lists, dicts, models or optionals get none derived.
template <typename Evaluate>
void DeriveAbstractEvalBy(Component& c, const std::map<std::string, Dtype>& output_fields,
                          Evaluate evaluate) {
  const auto input_schema = c.input_schema();  // held: fields() refers into it
  const bool flat =
      std::all_of(input_schema->fields().begin(), input_schema->fields().end(), [](const FieldSchema& f) {
        const auto kind = f.type.kind();
        return kind != SchemaType::Kind::kList && kind != SchemaType::Kind::kDict &&
               kind != SchemaType::Kind::kModel && kind != SchemaType::Kind::kOptional;
      });
  if (c.abstract_eval() || !flat) return;
  const auto array_fields = ArrayFields(*input_schema);
  c.AbstractEval(
      [=](const AbstractModelView& abstract, Record& out) -> Status {
        TESS_ASSIGN_OR_RETURN(const Value model, ZerosOf(abstract.value(), array_fields));
        TESS_ASSIGN_OR_RETURN(const auto dims, evaluate(ModelView(model)));
        for (const auto& [name, shape] : dims) {
          out.SetShapeDType(FieldKey<ArrayOf<double>>{-1, name}, {shape, output_fields.at(name)});
        }
        return Status::OK();
      },
      "The outputs' shapes and dtypes, from the function run on zeros of the inputs' shapes.");
}

}  // namespace tesscpp::autodiff::internal
