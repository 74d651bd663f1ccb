// schema.cc: SchemaType nodes and ModelSchema construction.
#include "tesscpp/schema.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "tesscpp/internal/core/path.h"

namespace tesscpp {

struct SchemaType::Node {
  Kind kind = Kind::kAny;
  ShapeSpec shape = ShapeSpec::AnyRank();
  std::optional<Dtype> dtype;
  bool differentiable = false;
  std::optional<SchemaType> item;
  std::shared_ptr<const ModelSchema> model;
};

namespace {

[[noreturn]] void Misuse(const char* what) {
  std::fprintf(stderr, "tesscpp: SchemaType misuse: %s\n", what);
  std::abort();
}

}  // namespace

std::shared_ptr<SchemaType::Node> NewNode(SchemaType::Kind kind) {
  auto node = std::make_shared<SchemaType::Node>();
  node->kind = kind;
  return node;
}

SchemaType SchemaType::Array(ShapeSpec shape, std::optional<Dtype> dtype) {
  auto node = NewNode(Kind::kArray);
  node->shape = std::move(shape);
  node->dtype = dtype;
  return SchemaType(std::move(node));
}

SchemaType SchemaType::ShapeDType(ShapeSpec shape, std::optional<Dtype> dtype) {
  auto node = NewNode(Kind::kShapeDType);
  node->shape = std::move(shape);
  node->dtype = dtype;
  return SchemaType(std::move(node));
}

SchemaType SchemaType::Int() { return SchemaType(NewNode(Kind::kInt)); }
SchemaType SchemaType::Float() { return SchemaType(NewNode(Kind::kFloat)); }
SchemaType SchemaType::Bool() { return SchemaType(NewNode(Kind::kBool)); }
SchemaType SchemaType::String() { return SchemaType(NewNode(Kind::kString)); }
SchemaType SchemaType::Any() { return SchemaType(NewNode(Kind::kAny)); }
SchemaType SchemaType::InputPath() { return SchemaType(NewNode(Kind::kInputPath)); }
SchemaType SchemaType::OutputPath() { return SchemaType(NewNode(Kind::kOutputPath)); }

SchemaType SchemaType::Container(Kind kind, SchemaType item) {
  auto node = NewNode(kind);
  node->item = std::move(item);
  return SchemaType(std::move(node));
}

SchemaType SchemaType::List(SchemaType item) { return Container(Kind::kList, std::move(item)); }
SchemaType SchemaType::Dict(SchemaType item) { return Container(Kind::kDict, std::move(item)); }
SchemaType SchemaType::Optional(SchemaType item) { return Container(Kind::kOptional, std::move(item)); }

SchemaType SchemaType::Model(std::shared_ptr<const ModelSchema> model) {
  if (model == nullptr) Misuse("Model(nullptr)");
  auto node = NewNode(Kind::kModel);
  node->model = std::move(model);
  return SchemaType(std::move(node));
}

SchemaType SchemaType::Differentiable() const {
  if (node_->kind != Kind::kArray) Misuse("only arrays can be differentiable");
  auto copy = std::make_shared<Node>(*node_);
  copy->differentiable = true;
  return SchemaType(std::move(copy));
}

SchemaType::Kind SchemaType::kind() const { return node_->kind; }

const ShapeSpec& SchemaType::shape() const {
  if (node_->kind != Kind::kArray && node_->kind != Kind::kShapeDType) Misuse("shape() of a non-array");
  return node_->shape;
}

const std::optional<Dtype>& SchemaType::dtype() const {
  if (node_->kind != Kind::kArray && node_->kind != Kind::kShapeDType) Misuse("dtype() of a non-array");
  return node_->dtype;
}

bool SchemaType::differentiable() const { return node_->differentiable; }

const SchemaType& SchemaType::item() const {
  if (!node_->item) Misuse("item() of a type without items");
  return *node_->item;
}

const std::shared_ptr<const ModelSchema>& SchemaType::model() const {
  if (node_->kind != Kind::kModel) Misuse("model() of a non-model");
  return node_->model;
}

Result<std::shared_ptr<const ModelSchema>> ModelSchema::Make(std::string name,
                                                             std::vector<FieldSchema> fields,
                                                             std::vector<ModelValidator> validators,
                                                             std::string description) {
  std::set<std::string> seen;
  for (const FieldSchema& f : fields) {
    auto path = Path::Parse(f.name);
    if (!path.ok() || path->segments().size() != 1 || path->segments()[0].kind != PathSegment::Kind::kField) {
      return Status::InvalidArgument("model ", name, ": field name '", f.name, "' is not an identifier");
    }
    if (!seen.insert(f.name).second) {
      return Status::InvalidArgument("model ", name, ": field '", f.name, "' is declared twice");
    }
  }
  auto model = std::shared_ptr<ModelSchema>(new ModelSchema());
  model->name_ = std::move(name);
  model->fields_ = std::move(fields);
  model->validators_ = std::move(validators);
  model->description_ = std::move(description);
  return std::shared_ptr<const ModelSchema>(std::move(model));
}

const FieldSchema* ModelSchema::field(std::string_view name) const {
  for (const FieldSchema& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace tesscpp
