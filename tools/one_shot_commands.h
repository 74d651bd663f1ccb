// one_shot_commands.h: the commands that answer once, as tesseract-runtime's
// do: one endpoint on a payload (`tesscpp apply ...`, `openapi`), and `check`.
#pragma once

#include <string>

#include "command_context.h"

namespace tesscpp::cli {

/// \brief Runs `endpoint` ("apply", "openapi.json") once on the payload (JSON
/// text or @file) and prints or writes its answer; the exit status.
int RunOnce(const CommonOptions& o, const std::string& endpoint, const std::string& payload_arg);

// check: tesseract-runtime check. Opens the component as serve would (a
// library: it loads, its build signature matches this tesscpp, its factory
// succeeds; a module: imported with tesseract-core's own checks of
// InputSchema, OutputSchema and apply) and builds its OpenAPI document, which
// renders every schema; serves and calls nothing.
int CheckComponent(const CommonOptions& o);

}  // namespace tesscpp::cli
