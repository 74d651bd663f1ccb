// init_project.h: `tesscpp init`, a new component project outside tesscpp's tree.
#pragma once

#include <string>

#include "tesscpp/status.h"

namespace tesscpp::cli {

/// \brief Writes a standalone component project named `name` into `dir`:
/// CMakeLists.txt (find_package(tesscpp) + tesscpp_add_component), <name>.cc
/// (inputs, outputs, apply and a VJP), test_apply.json (a TestSpec),
/// README.md and .gitignore. kInvalidArgument for a name that is not a valid
/// component and target name; kInvalidArgument also when `dir` exists, unless
/// `force` (then the project's files are overwritten, nothing else touched).
Status InitProject(const std::string& name, const std::string& dir, bool force);

}  // namespace tesscpp::cli
