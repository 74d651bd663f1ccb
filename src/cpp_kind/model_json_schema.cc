#include "cpp_kind/model_json_schema.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "cpp_kind/reference_models.h"
#include "runtime/py_text.h"
#include "schema/validate.h"

namespace tesscpp::cpp_kind {
namespace {

using Dict = Value::Dict;
using List = Value::List;

// The dtypes in tesseract-core's AllowedDtypes order (the order of its enums).
constexpr std::array<Dtype, 14> kAllowedDtypes = {
    Dtype::kFloat16, Dtype::kFloat32, Dtype::kFloat64,   Dtype::kInt8,      Dtype::kInt16,
    Dtype::kInt32,   Dtype::kInt64,   Dtype::kBool,      Dtype::kUInt8,     Dtype::kUInt16,
    Dtype::kUInt32,  Dtype::kUInt64,  Dtype::kComplex64, Dtype::kComplex128};

// array_encoding._castable: same-kind casts, and any integer to any integer
// (the runtime refuses values that do not fit rather than the dtype).
bool Castable(Dtype from, Dtype to) {
  return CanCastSameKind(from, to) || (IsInteger(from) && IsInteger(to));
}

// get_array_model's name: EncodedArrayModel__<shape>__<dtype>__<flags>.
std::string ArrayModelName(const SchemaType& type) {
  std::string shape;
  if (type.shape().any_rank()) {
    shape = "anyrank";
  } else if (type.shape().rank() == 0) {
    shape = "scalar";
  } else {
    for (const auto& dim : type.shape().dims()) {
      if (!shape.empty()) shape += '_';
      shape += dim ? std::to_string(*dim) : "any";
    }
  }
  const std::string dtype = type.dtype() ? std::string(DtypeName(*type.dtype())) : "None";
  return "EncodedArrayModel__" + shape + "__" + dtype + "__" +
         (type.differentiable() ? "DIFFERENTIABLE" : "noflags");
}

// The "shape" field of get_array_model: a tuple of the allowed sizes per
// dimension (free: any non-negative int; 1: exactly 1; N: 1 or N, broadcast).
Value ArrayShapeSchema(const ShapeSpec& shape) {
  Dict out;
  if (shape.any_rank()) {
    out.set("items", Dict{{"type", "integer"}});
  } else {
    List dims;
    List example;
    for (const auto& dim : shape.dims()) {
      if (!dim) {
        dims.push_back(Dict{{"type", "integer"}, {"minimum", 0}});
      } else if (*dim == 1) {
        dims.push_back(Dict{{"type", "integer"}, {"const", 1}});
      } else {
        dims.push_back(Dict{{"type", "integer"}, {"enum", List{1, *dim}}});
      }
      example.push_back(dim.value_or(1));
    }
    if (!dims.empty()) out.set("prefixItems", std::move(dims));
    out.set("minItems", shape.rank());
    out.set("maxItems", shape.rank());
    out.set("examples", List{std::move(example)});
  }
  out.set("type", "array");
  out.set("title", "Shape");
  out.set("description", "Shape of the array");
  return out;
}

// pydantic titles a field after its name unless its schema is a reference
// to a model (which brings its own title), also through `| None`.
bool TitleFromFieldName(const SchemaType& type) {
  switch (type.kind()) {
    case SchemaType::Kind::kModel:
    case SchemaType::Kind::kShapeDType: return false;
    case SchemaType::Kind::kOptional: return TitleFromFieldName(type.item());
    default: return true;
  }
}

// The default as pydantic shows it; abstract_eval's models show an array
// default as the ShapeDType of the array it validates to
// (create_abstract_eval_schema's replace_array_default_with_shapedtype).
Value DefaultJson(const SchemaType& type, const Value& value) {
  if (type.kind() != SchemaType::Kind::kShapeDType) return value;
  auto array = schema::ValidateValue(SchemaType::Array(type.shape(), type.dtype()), value);
  if (!array.ok()) return value;
  List shape;
  for (const int64_t d : array->as_tensor().shape().dims()) shape.push_back(d);
  return Dict{{"shape", std::move(shape)}, {"dtype", DtypeName(array->as_tensor().dtype())}};
}

}  // namespace

Value SchemaRef(std::string_view model) {
  return Dict{{"$ref", Value("#/components/schemas/" + std::string(model))}};
}

// pydantic's schema of Literal[...]: "const" for one value, "enum" for more.
Value StringLiteral(const List& values) {
  if (values.size() == 1) return Dict{{"type", "string"}, {"const", values[0]}};
  return Dict{{"type", "string"}, {"enum", values}};
}

// pydantic's dict schema (_common_dict_schema): a key pattern becomes
// patternProperties, other key constraints propertyNames; the value schema
// loses its title; an unconstrained value allows anything.
Value DictJson(Value keys, Value values) {
  Dict out{{"type", "object"}};
  Dict& k = keys.as_dict();
  std::optional<Value> pattern;
  if (!k.contains("$ref")) {
    if (const Value* p = k.find("pattern")) pattern = *p;
    k.erase("pattern");
    k.erase("title");
  }
  values.as_dict().erase("title");
  if (pattern) {
    out.set("patternProperties", Dict{{pattern->as_string(), std::move(values)}});
  } else if (!values.as_dict().empty()) {
    out.set("additionalProperties", std::move(values));
  } else {
    out.set("additionalProperties", true);
  }
  const Value* key_type = k.find("type");
  if ((key_type != nullptr && key_type->is_string() && key_type->as_string() == "string" && k.size() > 1) ||
      k.contains("$ref")) {
    k.erase("type");
    out.set("propertyNames", std::move(keys));
  }
  return out;
}

void JsonSchemaBuilder::AddReferenceModel(std::string_view name) {
  definitions.try_emplace(std::string(name), ReferenceModel(name));
}

// A model's schema, registered as a component (once: a model nested twice is one component).
Value JsonSchemaBuilder::ModelRef(const ModelSchema& model) {
  if (!definitions.contains(model.name())) {
    definitions.emplace(model.name(), Value());  // taken before recursing into the fields
    Dict properties;
    List required;
    for (const FieldSchema& f : model.fields()) {
      properties.set(f.name, FieldJson(f));
      if (!f.default_value) required.push_back(f.name);
    }
    // No "description": the runtime's renamed copies of the author's models
    // (create_model) have no docstring of their own.
    Dict schema{{"properties", std::move(properties)}};
    if (!required.empty()) schema.set("required", std::move(required));
    schema.set("type", "object");
    schema.set("additionalProperties", false);  // the runtime forbids extra keys
    schema.set("title", model.name());
    definitions[model.name()] = std::move(schema);
  }
  return SchemaRef(model.name());
}

// The schema of one field: its type's, with pydantic's field-level keys.
Value JsonSchemaBuilder::FieldJson(const FieldSchema& field) {
  Value schema = TypeJson(field.type);
  Dict& s = schema.as_dict();
  if (TitleFromFieldName(field.type) && !s.contains("title")) s.set("title", runtime::PyTitle(field.name));
  if (!field.description.empty()) s.set("description", field.description);
  if (field.default_value) s.set("default", DefaultJson(field.type, *field.default_value));
  return schema;
}

Value JsonSchemaBuilder::TypeJson(const SchemaType& type) {
  switch (type.kind()) {
    case SchemaType::Kind::kArray: return ArrayLeaf(type);
    case SchemaType::Kind::kShapeDType: AddReferenceModel("ShapeDType"); return SchemaRef("ShapeDType");
    case SchemaType::Kind::kInt: return Dict{{"type", "integer"}};
    case SchemaType::Kind::kFloat: return Dict{{"type", "number"}};
    case SchemaType::Kind::kBool: return Dict{{"type", "boolean"}};
    case SchemaType::Kind::kString: return Dict{{"type", "string"}};
    case SchemaType::Kind::kInputPath:
    case SchemaType::Kind::kOutputPath: return Dict{{"format", "path"}, {"type", "string"}};
    case SchemaType::Kind::kAny: return Dict{};
    case SchemaType::Kind::kList: return Dict{{"type", "array"}, {"items", TypeJson(type.item())}};
    case SchemaType::Kind::kDict: return DictJson(Dict{{"type", "string"}}, TypeJson(type.item()));
    case SchemaType::Kind::kOptional:
      return Dict{{"anyOf", List{TypeJson(type.item()), Dict{{"type", "null"}}}}};
    case SchemaType::Kind::kModel: return ModelRef(*type.model());
  }
  std::abort();  // every kind is handled above
}

// An array leaf: the runtime's EncodedArrayModel for its shape and dtype,
// inlined (not a component) and keeping its model name as title.
Value JsonSchemaBuilder::ArrayLeaf(const SchemaType& type) {
  for (const char* data :
       {"Base64ArrayData", "BinrefArrayData", "CudaIpcArrayData", "JsonArrayData", "JsonValue"}) {
    AddReferenceModel(data);
  }
  const Dict& parts = ArrayLeafParts();
  List dtypes;
  for (const Dtype d : kAllowedDtypes) {
    if (!type.dtype() || Castable(d, *type.dtype())) dtypes.push_back(DtypeName(d));
  }
  Value dtype = StringLiteral(dtypes);
  dtype.as_dict().set("title", "Dtype");
  dtype.as_dict().set("description", "Data type of the array");
  dtype.as_dict().set("examples", List{type.dtype() ? DtypeName(*type.dtype()) : "float64"});
  Dict properties{{"object_type", parts.at("object_type")},
                  {"shape", ArrayShapeSchema(type.shape())},
                  {"dtype", std::move(dtype)},
                  {"data", parts.at("data")}};
  List flags;
  if (type.differentiable()) flags.push_back("DIFFERENTIABLE");
  return Dict{{"properties", std::move(properties)},
              {"required", List{"shape", "dtype", "data"}},
              {"type", "object"},
              {"additionalProperties", false},
              {"title", ArrayModelName(type)},
              {"array_flags", std::move(flags)}};
}

}  // namespace tesscpp::cpp_kind
