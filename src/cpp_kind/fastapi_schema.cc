#include "cpp_kind/fastapi_schema.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/py_text.h"

namespace tesscpp::cpp_kind {
namespace {

using Dict = Value::Dict;
using List = Value::List;

// pydantic's GenerateJsonSchema.sort: object keys sorted at every depth, except
// directly under "properties" and "default" (field order, the value as given).
// A list passes its own key down to its items.
Value PydanticSort(const Value& v, std::string_view parent_key) {
  if (v.is_list()) {
    List out;
    for (const Value& item : v.as_list()) out.push_back(PydanticSort(item, parent_key));
    return out;
  }
  if (!v.is_dict()) return v;
  std::vector<const Dict::Item*> items;
  for (const Dict::Item& item : v.as_dict()) items.push_back(&item);
  if (parent_key != "properties" && parent_key != "default") {
    std::sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  Dict out;
  for (const Dict::Item* item : items) out.set(item->first, PydanticSort(item->second, item->first));
  return out;
}

// FastAPI encodes the document with exclude_none: a member whose value is null
// disappears at any depth (a null inside a list stays).
Value DropNullMembers(const Value& v) {
  if (v.is_list()) {
    List out;
    for (const Value& item : v.as_list()) out.push_back(DropNullMembers(item));
    return out;
  }
  if (!v.is_dict()) return v;
  Dict out;
  for (const auto& [key, member] : v.as_dict()) {
    if (!member.is_null()) out.set(key, DropNullMembers(member));
  }
  return out;
}

// The fields of FastAPI's openapi.models.Schema, in declaration order (by alias).
// clang-format off
constexpr std::array<std::string_view, 61> kSchemaFields = {
    // JSON Schema core, applicators
    "$schema", "$vocabulary", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef", "$defs", "$comment",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
    "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
    // validation
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    // format, content, meta-data, OpenAPI
    "format", "contentEncoding", "contentMediaType", "contentSchema", "title", "description", "default",
    "deprecated", "readOnly", "writeOnly", "examples", "discriminator", "xml", "externalDocs", "example"};
// clang-format on

bool IsOneOf(std::string_view key, std::initializer_list<std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// FastAPI validates every component schema into its Schema model and dumps it
// by alias: the model's fields come out in declaration order, extra keys
// (array_flags, differentiable_arrays, ...) after them as they were, numbers of
// float-typed fields as floats, and nested schemas the same way.
Value FastApiSchema(const Value& schema) {
  if (!schema.is_dict()) return schema;  // `true` / `false` schemas
  const Dict& in = schema.as_dict();
  Dict out;
  for (const std::string_view key : kSchemaFields) {
    const Value* v = in.find(key);
    if (v == nullptr) continue;
    Value field;
    if (IsOneOf(key, {"allOf", "anyOf", "oneOf", "prefixItems"})) {
      List schemas;
      for (const Value& s : v->as_list()) schemas.push_back(FastApiSchema(s));
      field = std::move(schemas);
    } else if (IsOneOf(key, {"$defs", "dependentSchemas", "properties", "patternProperties"})) {
      Dict schemas;
      for (const auto& [name, s] : v->as_dict()) schemas.set(name, FastApiSchema(s));
      field = std::move(schemas);
    } else if (IsOneOf(key,
                       {"not", "if", "then", "else", "items", "contains", "additionalProperties",
                        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"})) {
      field = FastApiSchema(*v);
    } else if (IsOneOf(key, {"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})) {
      field = v->as_number();
    } else if (key == "discriminator") {  // its own model: propertyName, mapping
      Dict d;
      for (const std::string_view k : {"propertyName", "mapping"}) {
        if (const Value* m = v->as_dict().find(k)) d.set(std::string(k), *m);
      }
      field = std::move(d);
    } else {
      field = *v;
    }
    out.set(std::string(key), std::move(field));
  }
  for (const auto& [key, v] : in) {
    if (std::find(kSchemaFields.begin(), kSchemaFields.end(), key) == kSchemaFields.end()) out.set(key, v);
  }
  return out;
}

}  // namespace

Value FastApiComponentSchema(const Value& schema, std::string_view name) {
  return DropNullMembers(FastApiSchema(PydanticSort(schema, name)));
}

std::string RouteDescription(std::string_view docstring) {
  const std::string cleaned = runtime::PyCleanDoc(docstring);
  const std::string_view text = cleaned;
  return std::string(runtime::PyStrip(text.substr(0, text.find('\f'))));
}

}  // namespace tesscpp::cpp_kind
