// `tesscpp build`: a root filesystem holding exactly what the component needs,
// imported as an image (docs/containers.md says why `docker import`, what the
// image holds and which contract of tesseract-core it keeps). ldd, strip, tar
// and the engine are run as programs.
#include "image_build.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "tesscpp/component.h"
#include "tesscpp/internal/component_library.h"
#include "tesscpp/internal/container_engine.h"
#include "tesscpp/internal/file.h"
#include "tesscpp/internal/json.h"
#include "tesscpp/internal/subprocess.h"

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

// Where things go in the image.
constexpr std::string_view kBin = "/usr/local/bin/tesscpp";
constexpr std::string_view kLibDir = "/usr/local/lib";
constexpr std::string_view kComponentDir = "/tesseract/component";
constexpr std::string_view kInputDir = "/tesseract/input_data";
constexpr std::string_view kOutputDir = "/tesseract/output_data";
constexpr int kUid = 1000;  // the image's default user (tesseract-core's --user overrides it)

// name -> host path of every shared library `file` loads, and the loader.
Status Closure(const std::string& file, std::map<std::string, std::string>& libs, std::string& loader) {
  TESS_ASSIGN_OR_RETURN(std::string listing, platform::RunChecked({"ldd", file}));
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    std::string arrow;
    std::string path;
    words >> name >> arrow >> path;
    if (arrow == "=>") {
      if (path == "not" || path.empty())
        return Status::NotFound(file, " needs ", name, ", which is not found");
      libs.emplace(name, path);
    } else if (!name.empty() && name[0] == '/') {
      loader = name;  // the interpreter, by absolute path
    }                 // else: the vDSO, which the kernel provides
  }
  return Status::OK();
}

// Copies `from` to `to` without debug information when it is an ELF file
// strip understands (the CLI and libtesscpp of a RelWithDebInfo build are
// mostly DWARF), else as it is.
Status MakeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return ec ? Status::IoError("cannot create ", dir.string(), ": ", ec.message()) : Status::OK();
}

Status Install(const std::string& from, const fs::path& to, mode_t mode) {
  TESS_RETURN_IF_ERROR(MakeDirs(to.parent_path()));
  auto stripped = platform::RunCaptured({"strip", "--strip-debug", "-o", to.string(), from});
  if (!stripped.ok() || stripped->exit_code != 0) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::IoError("cannot copy ", from, ": ", ec.message());
  }
  if (::chmod(to.c_str(), mode) != 0)
    return Status::IoError("chmod ", to.string(), ": ", std::strerror(errno));
  return Status::OK();
}

Status WriteFile(const fs::path& path, const std::string& text) {
  TESS_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return out ? Status::OK() : Status::IoError("cannot write ", path.string());
}

// A Dockerfile ENV value: quoted, with the reference's "\n" for newlines
// (TESSERACT_DESCRIPTION is read back that way).
std::string Quoted(const std::string& value) {
  std::string out = "\"";
  for (char ch : value) {
    if (ch == '\n') {
      out += "\\\\n";
    } else {
      // Dockerfile values expand $VARIABLES even inside double quotes.
      if (ch == '"' || ch == '\\' || ch == '$') out += '\\';
      out += ch;
    }
  }
  return out + "\"";
}

// A temporary directory removed with everything in it.
class ScratchDir {
 public:
  static Result<ScratchDir> Make() {
    TESS_ASSIGN_OR_RETURN(std::string path, platform::MakeTempDir("tesscpp_build_"));
    return ScratchDir(path);
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit ScratchDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

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
  if (fs::is_directory(o.component)) {
    TESS_ASSIGN_OR_RETURN(o.component, BuildProject(fs::absolute(o.component), o.cli));
  }
  TESS_ASSIGN_OR_RETURN(auto library, ComponentLibrary::Open(o.component));
  const Component& component = library->component();
  const std::string name = o.name.value_or(component.name());
  const std::string version = o.version.value_or(component.version());
  const std::string tag = o.tag.value_or(name + ":" + version);
  const std::string file_name = fs::path(o.component).filename().string();

  TESS_ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Make());
  const fs::path root = scratch.path() / "root";
  std::map<std::string, std::string> libs;
  std::string loader;
  TESS_RETURN_IF_ERROR(Closure(o.cli, libs, loader));
  TESS_RETURN_IF_ERROR(Closure(o.component, libs, loader));
  if (loader.empty()) return Status::Internal("ldd named no dynamic loader for ", o.cli);

  TESS_RETURN_IF_ERROR(Install(o.cli, root / fs::path(kBin).relative_path(), 0755));
  TESS_RETURN_IF_ERROR(
      Install(o.component, root / fs::path(kComponentDir).relative_path() / file_name, 0755));
  TESS_RETURN_IF_ERROR(Install(loader, root / fs::path(loader).relative_path(), 0755));
  for (const auto& [soname, path] : libs) {
    TESS_RETURN_IF_ERROR(Install(path, root / fs::path(kLibDir).relative_path() / soname, 0755));
  }
  TESS_RETURN_IF_ERROR(WriteFile(root / "etc/passwd",
                                 "root:x:0:0:root:/root:/sbin/nologin\n"
                                 "tesseract:x:" +
                                     std::to_string(kUid) + ":" + std::to_string(kUid) +
                                     ":tesseract:/tesseract:/sbin/nologin\n"));
  TESS_RETURN_IF_ERROR(
      WriteFile(root / "etc/group", "root:x:0:\ntesseract:x:" + std::to_string(kUid) + ":\n"));
  // Any user tesseract-core runs the container as (-u <host uid>) may write
  // results and scratch files.
  for (std::string_view dir : {std::string_view("/tmp"), kInputDir, kOutputDir}) {
    const fs::path path = root / fs::path(dir).relative_path();
    TESS_RETURN_IF_ERROR(MakeDirs(path));
    if (::chmod(path.c_str(), 01777) != 0)
      return Status::IoError("chmod ", path.string(), ": ", std::strerror(errno));
  }

  const fs::path archive = scratch.path() / "rootfs.tar";
  TESS_RETURN_IF_ERROR(platform::RunChecked({"tar", "--numeric-owner", "--owner=0", "--group=0", "-C",
                                             root.string(), "-cf", archive.string(), "."})
                           .status());
  TESS_ASSIGN_OR_RETURN(Buffer metadata_json, WriteJson(Value::Dict{{"name", Value(name)},
                                                                    {"version", Value(version)},
                                                                    {"built_by", Value("tesscpp")}}));
  const std::string metadata(metadata_json.string_view());
  const std::vector<std::string> changes = {
      "ENV TESSERACT_NAME=" + Quoted(name),
      "ENV TESSERACT_VERSION=" + Quoted(version),
      "ENV TESSERACT_DESCRIPTION=" + Quoted(component.description()),
      "ENV TESSCPP_COMPONENT=" + Quoted(std::string(kComponentDir) + "/" + file_name),
      "ENV LD_LIBRARY_PATH=" + std::string(kLibDir),
      "ENV TESSERACT_INPUT_PATH=" + std::string(kInputDir),
      "ENV TESSERACT_OUTPUT_PATH=" + std::string(kOutputDir),
      "ENV HOME=/tmp",
      "LABEL ai.pasteurlabs.tesseract.metadata=" + Quoted(metadata),
      "WORKDIR /tesseract",
      "EXPOSE 8000",
      "USER " + std::to_string(kUid) + ":" + std::to_string(kUid),
      R"(ENTRYPOINT [")" + std::string(kBin) + R"("])",
      R"(CMD ["--help"])",
  };
  std::vector<std::string> args = {"import"};
  for (const std::string& change : changes) args.insert(args.end(), {"--change", change});
  args.insert(args.end(), {archive.string(), tag});
  auto imported = client::ContainerEngine::FromEnvironment().RunOk(args);
  if (!imported.ok()) return imported.status().WithContext("importing the image");
  return tag;
}

}  // namespace tesscpp::cli
