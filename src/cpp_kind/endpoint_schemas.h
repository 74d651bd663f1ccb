// endpoint_schemas.h: the models each endpoint validates against, derived from
// a component's InputSchema and OutputSchema as tesseract-core derives them
// (renamed per endpoint, arrays replaced by ShapeDType for abstract_eval), and
// the differentiable paths the gradient endpoints accept.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tesscpp/internal/core/path.h"
#include "tesscpp/schema.h"

namespace tesscpp::cpp_kind {

/// \brief A copy of `model` and every model nested in it, each renamed
/// `<prefix><name>`. With `abstract`, array leaves become ShapeDType leaves and
/// model validators are dropped (they are written against real arrays).
std::shared_ptr<const ModelSchema> DeriveModel(const ModelSchema& model, const std::string& prefix,
                                               bool abstract);

/// \brief One differentiable array of a model, by path.
struct DifferentiablePath {
  /// "a", "mesh.points", "layers.[].w", "cell_data.{}": what differentiable_arrays keys show.
  std::string spelling;
  Path pattern;
  /// True when the path has a list or dict wildcard (matched, not compared).
  bool wildcard = false;
  /// The regex a wildcard path is validated with (tesseract-core's own spelling).
  std::string regex;
  SchemaType type;
};

/// \brief Every Differentiable array leaf reachable from `model`, in declaration order.
std::vector<DifferentiablePath> DifferentiablePaths(const ModelSchema& model);

/// \brief The entry of `paths` that `concrete` names, or nullptr.
const DifferentiablePath* FindDifferentiablePath(const std::vector<DifferentiablePath>& paths,
                                                 std::string_view concrete);

/// \brief Every model's field names in declaration order, keyed by the model's
/// path ("" for the root): the OpenAPI document's field_order.
std::vector<std::pair<std::string, std::vector<std::string>>> FieldOrder(const ModelSchema& model);

}  // namespace tesscpp::cpp_kind
