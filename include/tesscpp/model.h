// model.h: declaring a Tesseract's models in C++ and reading them back typed.
//
// A component author declares each model with a ModelBuilder. Every declared
// field returns a FieldKey whose C++ type says what the field holds; in the
// endpoint body `inputs[key]` hands out that field already validated and typed
// (an ArrayRef<float>, an int64_t, a nested ModelView, ...) by position, with no
// string lookup and no per-element checks:
//
//   ModelBuilder in("InputSchema");
//   auto a = in.Array<float>("a", {kAnyDim}, {.differentiable = true, .doc = "A vector."});
//   auto s = in.Scalar<float>("s", {.doc = "A scale.", .default_value = 1.0});
//   ...
//   ArrayRef<float> av = inputs[a];   float scale = inputs[s];
//
// Outputs are written into a Record with the same keys (Record::NewArray gives a
// writable span). Both sides are checked against the schema by the runtime:
// inputs before the endpoint runs, outputs after (dtype casts included).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/dtype.h"
#include "tesscpp/result.h"
#include "tesscpp/schema.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp {

class ModelView;

/// \brief A typed handle on a field: its position in the model and its name.
/// `D` is the field's descriptor (ArrayOf<float>, Int, DictOf<...>, ...).
template <typename D>
struct FieldKey {
  int index = -1;
  std::string name;
};

/// \brief Read-only typed access to a validated array.
template <typename T>
class ArrayRef {
 public:
  explicit ArrayRef(const Tensor& tensor) : tensor_(&tensor) {}
  const Shape& shape() const { return tensor_->shape(); }
  int64_t size() const { return tensor_->num_elements(); }
  std::span<const T> values() const { return {tensor_->data_as<const T>(), static_cast<size_t>(size())}; }
  const T& operator[](int64_t i) const { return tensor_->data_as<const T>()[i]; }
  const Tensor& tensor() const { return *tensor_; }

 private:
  const Tensor* tensor_;
};

/// \brief What abstract_eval sees in place of an array: its shape and dtype.
struct ShapeDType {
  std::vector<int64_t> shape;
  Dtype dtype = Dtype::kFloat64;
};

/// \name Field descriptors: the schema type of a field and how it is read.
/// @{

/// \brief An array of element type T (the dtype) and the given shape.
template <typename T>
struct ArrayOf {
  ShapeSpec shape = ShapeSpec::AnyRank();
  bool differentiable = false;
  using View = ArrayRef<T>;
  SchemaType type() const {
    SchemaType t = SchemaType::Array(shape, DtypeOf<T>());
    return differentiable ? t.Differentiable() : t;
  }
  static View Read(const Value& v) { return View(v.as_tensor()); }
};

/// \brief A 0-d array of T (Python's Float32, Int64, ...), read as a T.
template <typename T>
struct ScalarOf {
  bool differentiable = false;
  using View = T;
  SchemaType type() const {
    SchemaType t = SchemaType::Scalar(DtypeOf<T>());
    return differentiable ? t.Differentiable() : t;
  }
  static View Read(const Value& v) { return v.as_tensor().data_as<const T>()[0]; }
};

/// \brief An array of any dtype (kept as sent), read as the Tensor.
struct AnyArray {
  ShapeSpec shape = ShapeSpec::AnyRank();
  bool differentiable = false;
  using View = const Tensor&;
  SchemaType type() const {
    SchemaType t = SchemaType::Array(shape, std::nullopt);
    return differentiable ? t.Differentiable() : t;
  }
  static View Read(const Value& v) { return v.as_tensor(); }
};

struct Int {
  using View = int64_t;
  SchemaType type() const { return SchemaType::Int(); }
  static View Read(const Value& v) { return v.as_int(); }
};
struct Float {
  using View = double;
  SchemaType type() const { return SchemaType::Float(); }
  static View Read(const Value& v) { return v.as_number(); }
};
struct Bool {
  using View = bool;
  SchemaType type() const { return SchemaType::Bool(); }
  static View Read(const Value& v) { return v.as_bool(); }
};
struct String {
  using View = const std::string&;
  SchemaType type() const { return SchemaType::String(); }
  static View Read(const Value& v) { return v.as_string(); }
};
/// \brief A file of the input directory (tesseract-core's InputPath): sent
/// relative to it, read as the absolute path of an existing file; a path
/// that leaves the directory or names nothing is a 422.
struct InputPath {
  using View = const std::string&;
  SchemaType type() const { return SchemaType::InputPath(); }
  static View Read(const Value& v) { return v.as_string(); }
};
/// \brief A file the endpoint wrote into the output directory (tesseract-core's
/// OutputPath): set relative to it or absolute, answered relative to it.
struct OutputPath {
  using View = const std::string&;
  SchemaType type() const { return SchemaType::OutputPath(); }
  static View Read(const Value& v) { return v.as_string(); }
};

/// \brief A nested model (declared with its own ModelBuilder).
struct Nested {
  std::shared_ptr<const ModelSchema> model;
  using View = ModelView;
  SchemaType type() const { return SchemaType::Model(model); }
  static View Read(const Value& v);
};

/// \brief dict[str, Item]: iterate or look up by key.
template <typename Item>
class DictRef {
 public:
  explicit DictRef(const Value::Dict& dict) : dict_(&dict) {}
  size_t size() const { return dict_->size(); }
  std::optional<typename Item::View> find(std::string_view key) const {
    const Value* v = dict_->find(key);
    if (v == nullptr) return std::nullopt;
    return Item::Read(*v);
  }
  /// \brief Calls fn(key, view) for every entry in order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [key, v] : *dict_) fn(key, Item::Read(v));
  }

 private:
  const Value::Dict* dict_;
};

template <typename Item>
struct DictOf {
  Item item{};
  using View = DictRef<Item>;
  SchemaType type() const { return SchemaType::Dict(item.type()); }
  static View Read(const Value& v) { return View(v.as_dict()); }
};

/// \brief list[Item]: indexed access.
template <typename Item>
class ListRef {
 public:
  explicit ListRef(const Value::List& list) : list_(&list) {}
  size_t size() const { return list_->size(); }
  typename Item::View operator[](size_t i) const { return Item::Read((*list_)[i]); }

 private:
  const Value::List* list_;
};

template <typename Item>
struct ListOf {
  Item item{};
  using View = ListRef<Item>;
  SchemaType type() const { return SchemaType::List(item.type()); }
  static View Read(const Value& v) { return View(v.as_list()); }
};

/// \brief Item | None, read as std::optional (a reference_wrapper-free copy
/// for scalars; views for arrays, models and containers).
template <typename Item>
struct OptionalOf {
  Item item{};
  using View = std::optional<std::remove_cvref_t<typename Item::View>>;
  SchemaType type() const { return SchemaType::Optional(item.type()); }
  static View Read(const Value& v) {
    if (v.is_null()) return std::nullopt;
    return Item::Read(v);
  }
};
/// @}

/// \brief Which top-level fields were read through a ModelView that notes
/// them: what a replayed array-form call must know of the function it
/// recorded (tesscpp/autodiff/detail/replay.h).
class FieldReads {
 public:
  void Note(int index) {
    if (index < 0) return;
    if (static_cast<size_t>(index) >= read_.size()) read_.resize(static_cast<size_t>(index) + 1);
    read_[static_cast<size_t>(index)] = true;
  }
  void NoteAll() { all_ = true; }
  bool Read(int index) const {
    return all_ || (index >= 0 && static_cast<size_t>(index) < read_.size() && read_[index]);
  }

 private:
  std::vector<bool> read_;
  bool all_ = false;
};

/// \brief A validated model: its fields in declaration order. With `reads`,
/// every field read (and a read of the whole) is noted there.
class ModelView {
 public:
  explicit ModelView(const Value& model, FieldReads* reads = nullptr) : model_(&model), reads_(reads) {}

  template <typename D>
  typename D::View operator[](const FieldKey<D>& key) const {
    return D::Read(field(key.index));
  }
  /// \brief The field at `index` (declaration order), as a Value.
  const Value& field(int index) const {
    if (reads_ != nullptr) reads_->Note(index);
    return (model_->as_dict().begin() + index)->second;
  }
  /// \brief The whole model as a Value dict.
  const Value& value() const {
    if (reads_ != nullptr) reads_->NoteAll();
    return *model_;
  }

 private:
  const Value* model_;
  FieldReads* reads_;
};

inline ModelView Nested::Read(const Value& v) { return ModelView(v); }

/// \brief abstract_eval's view of its inputs: array fields are ShapeDTypes.
class AbstractModelView {
 public:
  explicit AbstractModelView(const Value& model) : model_(&model) {}

  template <typename T>
  ShapeDType operator[](const FieldKey<ArrayOf<T>>& key) const {
    return ReadShapeDType(field(key.index));
  }
  template <typename T>
  ShapeDType operator[](const FieldKey<ScalarOf<T>>& key) const {
    return ReadShapeDType(field(key.index));
  }
  ShapeDType operator[](const FieldKey<AnyArray>& key) const { return ReadShapeDType(field(key.index)); }
  AbstractModelView operator[](const FieldKey<Nested>& key) const {
    return AbstractModelView(field(key.index));
  }
  /// \brief Non-array fields read as in a ModelView.
  template <typename D>
  typename D::View operator[](const FieldKey<D>& key) const {
    return D::Read(field(key.index));
  }
  const Value& field(int index) const { return (model_->as_dict().begin() + index)->second; }
  const Value& value() const { return *model_; }

  /// \brief A {"shape", "dtype"} dict as validated by the runtime.
  static ShapeDType ReadShapeDType(const Value& v);

 private:
  const Value* model_;
};

/// \brief Options of one field.
struct FieldOptions {
  /// Marks an array field Differentiable (ignored for other kinds: see
  /// ArrayOf::differentiable for arrays nested in containers).
  bool differentiable = false;
  /// Shown in the OpenAPI document.
  std::string doc;
  /// Set to make the field optional; the value used when it is omitted.
  std::optional<Value> default_value;
};

/// \brief Builds a ModelSchema field by field; each field returns its typed key.
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string name, std::string doc = "")
      : name_(std::move(name)), doc_(std::move(doc)) {}

  /// \brief Adds a field of any descriptor.
  template <typename D>
  // NOLINTNEXTLINE(performance-unnecessary-value-param): options is moved into AddField
  FieldKey<D> Add(std::string name, D descriptor, FieldOptions options = {}) {
    if constexpr (requires { descriptor.differentiable; }) {
      descriptor.differentiable = descriptor.differentiable || options.differentiable;
    }
    return {AddField(name, descriptor.type(), std::move(options)), name};
  }
  template <typename T>
  FieldKey<ArrayOf<T>> Array(std::string name, ShapeSpec shape, FieldOptions options = {}) {
    return Add(std::move(name), ArrayOf<T>{std::move(shape)}, std::move(options));
  }
  template <typename T>
  FieldKey<ScalarOf<T>> Scalar(std::string name, FieldOptions options = {}) {
    return Add(std::move(name), ScalarOf<T>{}, std::move(options));
  }
  FieldKey<Nested> Model(std::string name, const ModelBuilder& nested, FieldOptions options = {}) {
    return Add(std::move(name), Nested{nested.Build()}, std::move(options));
  }

  /// \brief A check over the whole validated model (pydantic's
  /// model_validator(mode="after")): a non-OK Status becomes a 422
  /// `value_error` whose message is "Value error, <status message>".
  void Check(std::function<Status(const ModelView&)> check);

  /// \brief The schema declared so far. Declaration mistakes (duplicate or
  /// invalid names) are programming errors: they abort with the reason,
  /// which surfaces when the component library is loaded.
  std::shared_ptr<const ModelSchema> Build() const;

 private:
  int AddField(const std::string& name, SchemaType type, FieldOptions options);

  std::string name_;
  std::string doc_;
  std::vector<FieldSchema> fields_;
  std::vector<ModelValidator> validators_;
};

/// \brief Allocates a C-contiguous CPU tensor of T and returns it with its elements.
template <typename T>
Result<std::pair<Tensor, std::span<T>>> NewTensor(std::vector<int64_t> dims) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(std::move(dims)));
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(DtypeOf<T>(), std::move(shape)));
  std::span<T> elements{tensor.data_as<T>(), static_cast<size_t>(tensor.num_elements())};
  return std::pair<Tensor, std::span<T>>{std::move(tensor), elements};
}

/// \brief A model's output values under construction, by key.
class Record {
 public:
  Record() = default;

  /// \brief Sets a field to any value (a Tensor, a number, a nested dict).
  template <typename D>
  // NOLINTNEXTLINE(performance-unnecessary-value-param): value is moved into the record
  void Set(const FieldKey<D>& key, Value value) {
    values_.set(key.name, std::move(value));
  }
  /// \brief Allocates an array for `key`, stores it, and returns its elements
  /// to fill. The dtype is T; the runtime casts to the schema dtype if they differ.
  template <typename T, typename D>
  Result<std::span<T>> NewArray(const FieldKey<D>& key, std::vector<int64_t> dims) {
    TESS_ASSIGN_OR_RETURN(auto array, NewTensor<T>(std::move(dims)));
    values_.set(key.name, Value(std::move(array.first)));
    return array.second;
  }
  /// \brief For abstract_eval: the field's shape and dtype.
  template <typename D>
  void SetShapeDType(const FieldKey<D>& key, const ShapeDType& sd) {
    values_.set(key.name, ShapeDTypeValue(sd));
  }
  /// \brief The nested model's record, created on first use.
  Record& Nested(const FieldKey<tesscpp::Nested>& key);

  /// \brief Everything set, nested records included, as a Value dict.
  Value Finish() &&;

  static Value ShapeDTypeValue(const ShapeDType& sd);

 private:
  Value::Dict values_;
  std::map<std::string, std::unique_ptr<Record>> nested_;
};

/// \brief A set of differentiable paths ("a", "mesh.points", "cell_data.{t}"),
/// sorted, without duplicates.
using PathSet = std::vector<std::string>;
/// \brief Arrays keyed by path: tangents, cotangents, JVP/VJP results.
using TensorMap = std::map<std::string, Tensor>;
/// \brief Jacobian blocks: output path -> input path -> array of shape
/// (*output_shape, *input_shape).
using JacobianMap = std::map<std::string, TensorMap>;

}  // namespace tesscpp
