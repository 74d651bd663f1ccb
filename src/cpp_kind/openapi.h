// openapi.h: the /openapi.json document of a served component, shaped as
// tesseract-core 1.15's FastAPI app publishes it (component names, the apply
// wrappers' differentiable_arrays and field_order, array_flags on array
// leaves, the three x-supported-* keys).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/schema.h"
#include "tesscpp/value.h"

namespace tesscpp::cpp_kind {

struct OpenApiInput {
  std::string title;        ///< info.title
  std::string version;      ///< info.version
  std::string description;  ///< info.description
  /// The component's own models (named "InputSchema" / "OutputSchema").
  std::shared_ptr<const ModelSchema> inputs;
  std::shared_ptr<const ModelSchema> outputs;
  /// The component's endpoints (those not of kind kRuntime) that it
  /// implements, mapped to the author's docstring for each (may be empty).
  std::map<core::EndpointId, std::string> endpoint_docs;
  bool debug = false;  ///< adds /test
  std::vector<std::string> output_formats{"json", "json+base64", "json+binref"};
  std::vector<std::string> gpu_transports{"none"};
  std::vector<std::string> compressions{"none", "lz4"};
};

/// \brief The whole document.
Value BuildOpenApiDocument(const OpenApiInput& input);

}  // namespace tesscpp::cpp_kind
