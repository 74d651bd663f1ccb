// schema.h: the input and output schemas of a Tesseract.
//
// A schema is a tree of models (named, with ordered fields) whose leaves are
// arrays with shape and dtype constraints, scalars (int, float, bool, string),
// and containers (list, dict with string keys, optional). It is what a pydantic
// model is to tesseract-core, and it drives three things here: validating and
// coercing request Values (with pydantic-shaped issues, see validation_issue.h), the
// JSON Schema in /openapi.json, and the differentiable paths of the gradient
// endpoints.
//
//   auto inputs = ModelSchema::Make("InputSchema", {
//       Field("a", SchemaType::Array({kAnyDim}, Dtype::kFloat32).Differentiable(), "An arbitrary vector."),
//       Field("s", SchemaType::Scalar(Dtype::kFloat32).Differentiable(), "A scalar.", Value(1.0)),
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tesscpp/dtype.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp {

class ModelSchema;

/// \brief A free dimension in an array shape (Python's `None`).
inline constexpr std::nullopt_t kAnyDim = std::nullopt;

/// \brief The shape an array field accepts: any rank (Python's `...`) or a
/// fixed rank where each dimension is a size or free.
class ShapeSpec {
 public:
  /// \brief Any rank, any sizes.
  static ShapeSpec AnyRank() { return ShapeSpec(); }
  /// \brief Rank 0.
  static ShapeSpec Scalar() { return ShapeSpec(std::vector<std::optional<int64_t>>{}); }
  ShapeSpec(std::initializer_list<std::optional<int64_t>> dims) : any_rank_(false), dims_(dims) {}
  explicit ShapeSpec(std::vector<std::optional<int64_t>> dims) : any_rank_(false), dims_(std::move(dims)) {}

  bool any_rank() const { return any_rank_; }
  const std::vector<std::optional<int64_t>>& dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }

  friend bool operator==(const ShapeSpec&, const ShapeSpec&) = default;

 private:
  ShapeSpec() = default;
  bool any_rank_ = true;
  std::vector<std::optional<int64_t>> dims_;
};

/// \brief The type of a field: immutable and cheap to copy (shared).
class SchemaType {
 public:
  enum class Kind : uint8_t {
    kArray,       ///< an n-d array (a Tensor after validation)
    kShapeDType,  ///< abstract_eval's stand-in for an array: {"shape", "dtype"}
    kInt,         ///< a Python int (int64 here)
    kFloat,       ///< a Python float
    kBool,
    kString,
    kList,        ///< list[item]
    kDict,        ///< dict[str, item]
    kOptional,    ///< item | None
    kModel,       ///< a nested model
    kAny,         ///< any JSON value
    kInputPath,   ///< tesseract-core's InputPath: a file under the input directory
    kOutputPath,  ///< tesseract-core's OutputPath: a file under the output directory
  };

  /// \brief An array of `shape` and `dtype` (nullopt: any dtype, kept as sent).
  static SchemaType Array(ShapeSpec shape, std::optional<Dtype> dtype);
  /// \brief A 0-d array: Python's Float32, Int64, ... aliases.
  static SchemaType Scalar(Dtype dtype) { return Array(ShapeSpec::Scalar(), dtype); }
  static SchemaType ShapeDType(ShapeSpec shape, std::optional<Dtype> dtype);
  static SchemaType Int();
  static SchemaType Float();
  static SchemaType Bool();
  static SchemaType String();
  static SchemaType Any();
  /// \brief A string naming a file relative to the input directory
  /// (TESSERACT_INPUT_PATH): validated to stay inside it and to exist, and
  /// read as the absolute, resolved path.
  static SchemaType InputPath();
  /// \brief A string naming a file inside the output directory
  /// (TESSERACT_OUTPUT_PATH), relative or absolute: validated to stay inside
  /// it and to exist; answered relative to it.
  static SchemaType OutputPath();
  static SchemaType List(SchemaType item);
  static SchemaType Dict(SchemaType item);
  static SchemaType Optional(SchemaType item);
  static SchemaType Model(std::shared_ptr<const ModelSchema> model);

  /// \brief This array type marked differentiable. Precondition: kind() is kArray.
  SchemaType Differentiable() const;

  Kind kind() const;
  bool is_array() const { return kind() == Kind::kArray; }
  /// \name Array leaves (kArray, kShapeDType).
  /// @{
  const ShapeSpec& shape() const;
  const std::optional<Dtype>& dtype() const;
  bool differentiable() const;
  /// @}
  /// \brief The element type of a list, dict or optional.
  const SchemaType& item() const;
  /// \brief The model of a kModel type.
  const std::shared_ptr<const ModelSchema>& model() const;

 private:
  struct Node;
  friend std::shared_ptr<Node> NewNode(Kind kind);
  explicit SchemaType(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  static SchemaType Container(Kind kind, SchemaType item);
  std::shared_ptr<const Node> node_;
};

/// \brief One field of a model.
struct FieldSchema {
  std::string name;
  SchemaType type;
  std::string description;
  /// Set when the field may be omitted; the value used then.
  std::optional<Value> default_value;
};

/// \brief A field; with a default it is optional.
inline FieldSchema Field(std::string name, SchemaType type, std::string description = "",
                         std::optional<Value> default_value = std::nullopt) {
  return FieldSchema{std::move(name), std::move(type), std::move(description), std::move(default_value)};
}

/// \brief A check on a whole model, run after its fields validated (pydantic's
/// model_validator(mode="after")). It sees the validated model as a Value dict;
/// a non-OK Status becomes a 422 `value_error` whose message is the Status's.
using ModelValidator = std::function<Status(const Value& model)>;

/// \brief A named model: ordered fields plus validators. Immutable once made;
/// shared by every SchemaType that nests it.
class ModelSchema {
 public:
  /// \brief kInvalidArgument for duplicate or empty field names or a name that
  /// is not a Python identifier.
  static Result<std::shared_ptr<const ModelSchema>> Make(std::string name, std::vector<FieldSchema> fields,
                                                         std::vector<ModelValidator> validators = {},
                                                         std::string description = "");

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::vector<FieldSchema>& fields() const { return fields_; }
  const std::vector<ModelValidator>& validators() const { return validators_; }
  const FieldSchema* field(std::string_view name) const;

 private:
  ModelSchema() = default;
  std::string name_;
  std::string description_;
  std::vector<FieldSchema> fields_;
  std::vector<ModelValidator> validators_;
};

}  // namespace tesscpp
