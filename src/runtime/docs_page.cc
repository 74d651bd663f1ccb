// PLACEHOLDER (being written this session): see docs_page.h.
#include "runtime/docs_page.h"

namespace tesscpp::runtime {
std::string RenderDocsPage(const Value& /*openapi*/) { return "<!doctype html><title>docs</title>"; }
}  // namespace tesscpp::runtime
