// docs_page.h: the /docs page, a self-contained HTML rendering of the OpenAPI
// document (endpoints, their request and response schemas, an example request
// per endpoint). No script or style is fetched from anywhere.
#pragma once

#include <string>

#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief The page for `openapi` (the document BuildOpenApiDocument made).
std::string RenderDocsPage(const Value& openapi);

}  // namespace tesscpp::runtime
