// model_json_schema.h: pydantic's JSON schema of a component's models as
// tesseract-core's runtime renders them (array leaves as EncodedArrayModel
// objects, dict and Literal shapes, titles and defaults), collected into the
// component schemas of /openapi.json.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "tesscpp/schema.h"
#include "tesscpp/value.h"

namespace tesscpp::cpp_kind {

/// \brief {"$ref": "#/components/schemas/<model>"}.
Value SchemaRef(std::string_view model);

/// \brief pydantic's schema of Literal[...] over strings: "const" for one value, "enum" for more.
Value StringLiteral(const Value::List& values);

/// \brief pydantic's schema of dict[K, V] from the key and value schemas.
Value DictJson(Value keys, Value values);

/// \brief Collects component schemas while the document refers to them.
struct JsonSchemaBuilder {
  /// The component schemas collected so far, by name.
  std::map<std::string, Value> definitions;

  /// \brief Adds one of reference_models.h's fixed models (once).
  void AddReferenceModel(std::string_view name);

  /// \brief A model's schema, registered as a component (once: a model
  /// nested twice is one component); returns the reference to it.
  Value ModelRef(const ModelSchema& model);

  /// \brief The schema of one field: its type's, with pydantic's field-level keys.
  Value FieldJson(const FieldSchema& field);

  /// \brief The schema of a type, registering the models it names.
  Value TypeJson(const SchemaType& type);

  /// \brief An array leaf: the runtime's EncodedArrayModel for its shape and
  /// dtype, inlined (not a component) and keeping its model name as title.
  Value ArrayLeaf(const SchemaType& type);
};

}  // namespace tesscpp::cpp_kind
