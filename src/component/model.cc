// ModelBuilder, the model views and Record: how a component declares and reads
// its schemas.
#include "tesscpp/model.h"

#include <stdexcept>

namespace tesscpp {

int ModelBuilder::AddField(const std::string& name, SchemaType type, FieldOptions options) {
  fields_.push_back(Field(name, std::move(type), std::move(options.doc), std::move(options.default_value)));
  // Declaration mistakes surface here, at the line that made them (the
  // component factory runs under the loader, which reports the exception).
  if (auto made = ModelSchema::Make(name_, fields_); !made.ok()) {
    fields_.pop_back();
    throw std::invalid_argument(made.status().message());
  }
  return static_cast<int>(fields_.size()) - 1;
}

void ModelBuilder::Check(std::function<Status(const ModelView&)> check) {
  validators_.push_back([check = std::move(check)](const Value& model) { return check(ModelView(model)); });
}

std::shared_ptr<const ModelSchema> ModelBuilder::Build() const {
  auto made = ModelSchema::Make(name_, fields_, validators_, doc_);
  if (!made.ok()) throw std::invalid_argument(made.status().message());  // unreachable: AddField checked
  return *std::move(made);
}

ShapeDType AbstractModelView::ReadShapeDType(const Value& v) {
  ShapeDType sd;
  for (const Value& d : v.as_dict().at("shape").as_list()) sd.shape.push_back(d.as_int());
  sd.dtype = *DtypeFromName(v.as_dict().at("dtype").as_string());  // validated by the runtime
  return sd;
}

Record& Record::Nested(const FieldKey<tesscpp::Nested>& key) {
  auto& slot = nested_[key.name];
  if (!slot) slot = std::make_unique<Record>();
  return *slot;
}

Value Record::Finish() && {
  for (auto& [name, record] : nested_) values_.set(name, std::move(*record).Finish());
  return Value(std::move(values_));
}

Value Record::ShapeDTypeValue(const ShapeDType& sd) {
  Value::List dims;
  dims.reserve(sd.shape.size());
  for (int64_t d : sd.shape) dims.emplace_back(d);
  return Value::Dict{{"shape", Value(std::move(dims))}, {"dtype", Value(DtypeName(sd.dtype))}};
}

}  // namespace tesscpp
