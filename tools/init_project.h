// init_project.h: `tesscpp init`, a new component project outside tesscpp's tree.
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/result.h"

namespace tesscpp::cli {

/// \brief What the project's component shows.
enum class ProjectTemplate {
  kDerived,   ///< apply written once, generically; derivatives derived (tesscpp::autodiff)
  kArray,     ///< apply written once over Dr.Jit arrays; derivatives derived (tesscpp::autodiff_arrays)
  kExplicit,  ///< apply and a hand-written VJP (no dependency beyond tesscpp)
};

/// \brief "derived", "array" or "explicit"; kInvalidArgument naming them otherwise.
Result<ProjectTemplate> ProjectTemplateFromName(std::string_view name);

/// \brief Writes a standalone component project named `name` into `dir`:
/// CMakeLists.txt (find_package(tesscpp) + tesscpp_add_component, and
/// tesscpp::autodiff for the derived template, tesscpp::autodiff_arrays for the
/// array template), <name>.cc (inputs, outputs,
/// apply and its derivatives), test_apply.json (a TestSpec), README.md and
/// .gitignore. kInvalidArgument for a name that is not a valid component and
/// target name; kInvalidArgument also when `dir` exists, unless `force` (then
/// the project's files are overwritten, nothing else touched).
Status InitProject(const std::string& name, const std::string& dir, bool force,
                   ProjectTemplate kind = ProjectTemplate::kDerived);

}  // namespace tesscpp::cli
