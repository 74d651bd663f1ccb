// Endpoint models derived from a component's schemas.
#include "cpp_kind/endpoint_schemas.h"

#include <map>

namespace tesscpp::cpp_kind {
namespace {

using ModelCache = std::map<const ModelSchema*, std::shared_ptr<const ModelSchema>>;

std::shared_ptr<const ModelSchema> Derive(const ModelSchema& model, const std::string& prefix, bool abstract,
                                          ModelCache& cache);

SchemaType DeriveType(const SchemaType& type, const std::string& prefix, bool abstract, ModelCache& cache) {
  switch (type.kind()) {
    case SchemaType::Kind::kArray:
      return abstract ? SchemaType::ShapeDType(type.shape(), type.dtype()) : type;
    case SchemaType::Kind::kList: return SchemaType::List(DeriveType(type.item(), prefix, abstract, cache));
    case SchemaType::Kind::kDict: return SchemaType::Dict(DeriveType(type.item(), prefix, abstract, cache));
    case SchemaType::Kind::kOptional:
      return SchemaType::Optional(DeriveType(type.item(), prefix, abstract, cache));
    case SchemaType::Kind::kModel: return SchemaType::Model(Derive(*type.model(), prefix, abstract, cache));
    default: return type;
  }
}

std::shared_ptr<const ModelSchema> Derive(const ModelSchema& model, const std::string& prefix, bool abstract,
                                          ModelCache& cache) {
  // A model nested twice stays one model (one OpenAPI component).
  if (auto it = cache.find(&model); it != cache.end()) return it->second;
  std::vector<FieldSchema> fields;
  for (const FieldSchema& f : model.fields()) {
    fields.push_back(
        Field(f.name, DeriveType(f.type, prefix, abstract, cache), f.description, f.default_value));
  }
  std::vector<ModelValidator> validators;
  if (!abstract) validators = model.validators();
  // The source model was valid, so the copy is.
  auto derived = *ModelSchema::Make(prefix + model.name(), std::move(fields), std::move(validators),
                                    model.description());
  cache.emplace(&model, derived);
  return derived;
}

// Collects differentiable leaves below `type` at `path`.
void CollectPaths(const SchemaType& type, const Path& path, std::vector<DifferentiablePath>& out) {
  switch (type.kind()) {
    case SchemaType::Kind::kArray:
      if (type.differentiable()) {
        // Wildcard paths are validated with a regex in tesseract-core's
        // spelling: segments joined by "\.", a list index "\[\d+\]", a dict
        // key "\{(?:[^{}\\]|\\.)+\}".
        std::string regex;
        if (path.is_pattern()) {
          for (const PathSegment& s : path.segments()) {
            if (!regex.empty()) regex += "\\.";
            if (s.kind == PathSegment::Kind::kAnyIndex) {
              regex += "\\[\\d+\\]";
            } else if (s.kind == PathSegment::Kind::kAnyKey) {
              regex += "\\{(?:[^{}\\\\]|\\\\.)+\\}";
            } else {
              regex += s.name;
            }
          }
        }
        out.push_back({path.ToString(), path, path.is_pattern(), std::move(regex), type});
      }
      return;
    case SchemaType::Kind::kList:
      CollectPaths(type.item(), path.Child({PathSegment::Kind::kAnyIndex, {}, 0}), out);
      return;
    case SchemaType::Kind::kDict:
      CollectPaths(type.item(), path.Child({PathSegment::Kind::kAnyKey, {}, 0}), out);
      return;
    case SchemaType::Kind::kOptional: CollectPaths(type.item(), path, out); return;
    case SchemaType::Kind::kModel:
      for (const FieldSchema& f : type.model()->fields()) {
        CollectPaths(f.type, path.Child(PathSegment::Field(f.name)), out);
      }
      return;
    default: return;
  }
}

void CollectFieldOrder(const SchemaType& type, const Path& path,
                       std::vector<std::pair<std::string, std::vector<std::string>>>& out) {
  switch (type.kind()) {
    case SchemaType::Kind::kList:
      CollectFieldOrder(type.item(), path.Child({PathSegment::Kind::kAnyIndex, {}, 0}), out);
      return;
    case SchemaType::Kind::kDict:
      CollectFieldOrder(type.item(), path.Child({PathSegment::Kind::kAnyKey, {}, 0}), out);
      return;
    case SchemaType::Kind::kOptional: CollectFieldOrder(type.item(), path, out); return;
    case SchemaType::Kind::kModel: {
      std::vector<std::string> names;
      for (const FieldSchema& f : type.model()->fields()) names.push_back(f.name);
      out.emplace_back(path.ToString(), std::move(names));
      for (const FieldSchema& f : type.model()->fields()) {
        CollectFieldOrder(f.type, path.Child(PathSegment::Field(f.name)), out);
      }
      return;
    }
    default: return;
  }
}

SchemaType ModelType(const ModelSchema& model) {
  // A non-owning view: the caller's model outlives the walk.
  return SchemaType::Model(std::shared_ptr<const ModelSchema>(std::shared_ptr<const ModelSchema>(), &model));
}

}  // namespace

std::shared_ptr<const ModelSchema> DeriveModel(const ModelSchema& model, const std::string& prefix,
                                               bool abstract) {
  ModelCache cache;
  return Derive(model, prefix, abstract, cache);
}

std::vector<DifferentiablePath> DifferentiablePaths(const ModelSchema& model) {
  std::vector<DifferentiablePath> out;
  CollectPaths(ModelType(model), Path(), out);
  return out;
}

const DifferentiablePath* FindDifferentiablePath(const std::vector<DifferentiablePath>& paths,
                                                 std::string_view concrete) {
  for (const DifferentiablePath& p : paths) {
    if (!p.wildcard) {
      if (p.spelling == concrete) return &p;
      continue;
    }
    auto parsed = Path::Parse(concrete);
    if (parsed.ok() && !parsed->is_pattern() && p.pattern.Matches(*parsed)) return &p;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::vector<std::string>>> FieldOrder(const ModelSchema& model) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  CollectFieldOrder(ModelType(model), Path(), out);
  return out;
}

}  // namespace tesscpp::cpp_kind
