// `tesscpp build`: a root filesystem holding exactly what the component needs,
// imported as an image (docs/containers.md says why `docker import`, what the
// image holds and which contract of tesseract-core it keeps). A folder with a
// tesseract_api.py is a Python module's image (python_image.cc).
#include "image_build.h"

#include <cstdlib>
#include <filesystem>

#include "image_root.h"
#include "python_image.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/component_kind.h"
#include "tesscpp/internal/loader/component_library.h"
#include "tesscpp/internal/platform/subprocess.h"

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kComponentDir = "/tesseract/component";

// The SDK's CMake package for building a project: $tesscpp_DIR, else the one
// installed beside this CLI (<prefix>/bin/tesscpp, <prefix>/lib/cmake/tesscpp;
// the Python wheel has the same layout).
Result<fs::path> SdkCmakeDir(const std::string& cli) {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("tesscpp_DIR"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  const fs::path prefix = fs::path(cli).parent_path().parent_path();
  candidates.push_back(prefix / "lib" / "cmake" / "tesscpp");
  candidates.push_back(prefix / "lib64" / "cmake" / "tesscpp");
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "tesscppConfig.cmake")) return dir;
  }
  return Status::NotFound("build: no tesscpp CMake package beside ", cli,
                          " (an installed SDK or the Python package has one); set tesscpp_DIR to its folder");
}

// A component project (tesscpp init's, or any CMake project that uses
// tesscpp_add_component): configured as Release in <dir>/build-image and
// built; its one component library is returned.
Result<std::string> BuildProject(const fs::path& dir, const std::string& cli) {
  if (!fs::exists(dir / "CMakeLists.txt"))
    return Status::NotFound("build: ", dir.string(), " is a folder without a CMakeLists.txt");
  TESS_ASSIGN_OR_RETURN(fs::path sdk, SdkCmakeDir(cli));
  const fs::path build = dir / "build-image";
  auto configured = platform::RunChecked({"cmake", "-S", dir.string(), "-B", build.string(),
                                          "-DCMAKE_BUILD_TYPE=Release", "-Dtesscpp_DIR=" + sdk.string()});
  if (!configured.ok()) return configured.status().WithContext("build: configuring " + dir.string());
  auto built = platform::RunChecked({"cmake", "--build", build.string(), "--parallel"});
  if (!built.ok()) return built.status().WithContext("build: compiling " + dir.string());
  std::vector<std::string> found;
  for (auto it = fs::recursive_directory_iterator(build); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && name == "CMakeFiles") {
      it.disable_recursion_pending();
    } else if (it->is_regular_file() && name.rfind("lib", 0) == 0 && it->path().extension() == ".so") {
      found.push_back(it->path().string());
    }
  }
  if (found.size() != 1) {
    std::string list;
    for (const std::string& f : found) list += " " + f;
    return Status::InvalidArgument("build: ", dir.string(), " built ", found.size(),
                                   " libraries where one component was expected:", list);
  }
  return found.front();
}

}  // namespace

Result<std::string> BuildImage(const ImageBuildOptions& options) {
  ImageBuildOptions o = options;
  const core::ComponentKind kind = core::ComponentKindOf(o.component);
  if (kind == core::ComponentKind::kPythonProject) return BuildPythonImage(o);
  if (kind == core::ComponentKind::kCppProject) {
    TESS_ASSIGN_OR_RETURN(o.component, BuildProject(fs::absolute(o.component), o.cli));
  }
  TESS_ASSIGN_OR_RETURN(auto library, ComponentLibrary::Open(o.component));
  const Component& component = library->component();
  const std::string name = o.name.value_or(component.name());
  const std::string version = o.version.value_or(component.version());
  const std::string tag = o.tag.value_or(name + ":" + version);
  const std::string in_image = std::string(kComponentDir) + "/" + fs::path(o.component).filename().string();

  TESS_ASSIGN_OR_RETURN(ImageRoot root, ImageRoot::Make());
  TESS_RETURN_IF_ERROR(root.AddClosure(o.cli));
  TESS_RETURN_IF_ERROR(root.AddClosure(o.component));
  TESS_RETURN_IF_ERROR(root.Install(o.cli, kImageCli, 0755));
  TESS_RETURN_IF_ERROR(root.Install(o.component, in_image, 0755));
  TESS_RETURN_IF_ERROR(root.Finish());
  TESS_ASSIGN_OR_RETURN(Buffer metadata, WriteJson(Value::Dict{{"name", Value(name)},
                                                               {"version", Value(version)},
                                                               {"built_by", Value("tesscpp")}}));
  std::vector<std::string> changes =
      ContractChanges(name, version, component.description(), std::string(metadata.string_view()));
  changes.push_back("ENV TESSCPP_COMPONENT=" + DockerQuoted(in_image));
  return root.Import(tag, changes);
}

}  // namespace tesscpp::cli
