// component_kind.h: which kind of component a path names, decided in one
// place for every command and session that takes a component by path.
#pragma once

#include <string_view>

namespace tesscpp::core {

enum class ComponentKind {
  kLibrary,        ///< a component library: lib<name>.so (or .so.<version>)
  kPythonModule,   ///< a tesseract_api.py, served by the Python host
  kPythonProject,  ///< a directory holding tesseract_api.py (images are built from it)
  kCppProject,     ///< any other directory: a CMake project building one library
  kUnknown,        ///< none of these (a missing path is kUnknown only if it looks like none)
};

/// \brief The kind `path` names: by its suffix for files, by whether it
/// holds tesseract_api.py for directories. Reads the file system only to
/// tell a directory.
ComponentKind ComponentKindOf(std::string_view path);

}  // namespace tesscpp::core
