#include "tesscpp/internal/core/component_kind.h"

#include <filesystem>
#include <string>
#include <system_error>

namespace tesscpp::core {

ComponentKind ComponentKindOf(std::string_view path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p{std::string(path)};
  if (fs::is_directory(p, ec)) {
    return fs::exists(p / "tesseract_api.py", ec) ? ComponentKind::kPythonProject
                                                  : ComponentKind::kCppProject;
  }
  if (path.ends_with(".py")) return ComponentKind::kPythonModule;
  if (path.ends_with(".so") || path.find(".so.") != std::string_view::npos) return ComponentKind::kLibrary;
  return ComponentKind::kUnknown;
}

}  // namespace tesscpp::core
