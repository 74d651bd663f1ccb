// python_image.cc: the image of a Python module (docs/containers.md, "Images
// of Python modules"). What only Python can do runs in the Python that hosts
// modules: tesscpp._image_plan reads the configuration with tesseract-core's
// own model and says what goes where; pip installs the requirements;
// compileall writes the bytecode. This file assembles the root filesystem
// (ImageRoot) and imports it.
#include "python_image.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>
#include <vector>

#include "image_root.h"
#include "python_module.h"
#include "tesscpp/internal/client/container_engine.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/platform/subprocess.h"

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSitePackages = "/opt/tesseract/site-packages";
constexpr std::string_view kApiPath = "/tesseract/tesseract_api.py";

std::vector<std::string> Strings(const Value& list) {
  std::vector<std::string> out;
  for (const Value& item : list.as_list()) out.push_back(item.as_string());
  return out;
}

// The last `count` lines of a program's output, for an error message.
std::string Tail(const std::string& text, int count) {
  size_t at = text.size();
  while (at > 0 && (text[at - 1] == '\n' || text[at - 1] == ' ')) --at;
  const size_t end = at;
  for (int lines = 0; at > 0 && lines < count; --at) {
    if (text[at - 1] == '\n' && ++lines == count) break;
  }
  return text.substr(at, end - at);
}

// The plan: tesscpp._image_plan's JSON, or its refusal (which names the key
// or the problem) as the error.
Result<Value> ReadPlan(const std::string& python, const std::string& package_root, const fs::path& dir) {
  std::vector<std::string> argv = {"env", "PYTHONPATH=" + package_root, python,
                                   "-m",  "tesscpp._image_plan",        dir.string()};
  TESS_ASSIGN_OR_RETURN(platform::Finished planned, platform::RunCaptured(argv));
  if (planned.exit_code != 0) {
    return Status::InvalidArgument("build: ", Tail(planned.err.empty() ? planned.out : planned.err, 12));
  }
  return ReadJson(planned.out);
}

// Copies the tree `from` to `to` (following symbolic links), leaving out
// any __pycache__ and the paths (relative to `from`) in `skip`.
Status CopyTree(const fs::path& from, const fs::path& to, const std::vector<std::string>& skip) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return Status::IoError("cannot create ", to.string(), ": ", ec.message());
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(from);
    const fs::path target = to / relative;
    if (std::find(skip.begin(), skip.end(), relative.generic_string()) != skip.end()) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory()) {
      if (it->path().filename() == "__pycache__") {
        it.disable_recursion_pending();
        continue;
      }
      fs::create_directories(target, ec);
    } else if (it->is_regular_file()) {
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) return Status::IoError("cannot copy ", it->path().string(), ": ", ec.message());
  }
  if (ec) return Status::IoError("cannot read ", from.string(), ": ", ec.message());
  return Status::OK();
}

// Every extension module and shared library under `dir`.
std::vector<std::string> SharedObjects(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file() &&
        (name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos)))
      out.push_back(it->path().string());
  }
  return out;
}

bool IsElf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && std::string_view(magic, 4) ==
                   "\x7f"
                   "ELF";
}

// pip installs tesseract-core's runtime and the module's requirements into
// the image's site-packages, from the index this machine reaches; a failure
// names what could not be installed (pip's last lines).
Status InstallRequirements(const std::string& python, const Value& plan, const fs::path& site) {
  std::vector<std::string> argv = {"env"};
  for (const auto& [key, value] : plan.as_dict().at("build_env").as_dict())
    argv.push_back(key + "=" + value.as_string());
  for (const std::string& word :
       {python, std::string("-m"), std::string("pip"), std::string("install"), std::string("--quiet"),
        std::string("--no-input"), std::string("--disable-pip-version-check"), std::string("--no-compile"),
        std::string("--no-warn-script-location"), std::string("--target"), site.string()}) {
    argv.push_back(word);
  }
  for (const std::string& requirement : Strings(plan.as_dict().at("pip_arguments")))
    argv.push_back(requirement);
  TESS_ASSIGN_OR_RETURN(platform::Finished installed, platform::RunCaptured(argv));
  if (installed.exit_code != 0) {
    return Status::InvalidArgument("build: pip could not install the requirements:\n",
                                   Tail(installed.err, 8));
  }
  std::error_code ec;
  fs::remove_all(site / "bin", ec);  // console scripts naming this machine's interpreter
  // Dependencies a server never imports (the plan names them: pip).
  for (const std::string& name : Strings(plan.as_dict().at("prune"))) {
    for (const fs::directory_entry& entry : fs::directory_iterator(site, ec)) {
      const std::string file = entry.path().filename().string();
      if (file == name || (file.rfind(name + "-", 0) == 0 && file.ends_with(".dist-info")))
        fs::remove_all(entry, ec);
    }
  }
  // Test suites the runtime never imports (numpy's alone is several MB).
  std::vector<fs::path> tests;
  for (auto it = fs::recursive_directory_iterator(site, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory() && it.depth() > 0 && it->path().filename() == "tests") {
      tests.push_back(it->path());
      it.disable_recursion_pending();
    }
  }
  for (const fs::path& dir : tests) fs::remove_all(dir, ec);
  return Status::OK();
}

// The interpreter at its own path, its standard library (less what a server
// never imports: its tests, IDLE, Tk, ensurepip, 2to3, installed packages,
// the static library of config-*) and the shared libraries of all of it.
Status InstallPython(ImageRoot& root, const Value& plan) {
  const Value::Dict& python = plan.as_dict().at("python").as_dict();
  const std::string executable = python.at("executable").as_string();
  const std::string stdlib = python.at("stdlib").as_string();
  TESS_RETURN_IF_ERROR(root.Install(executable, executable, 0755));
  TESS_RETURN_IF_ERROR(root.AddClosure(executable));
  TESS_RETURN_IF_ERROR(CopyTree(stdlib, root.At(stdlib), Strings(python.at("stdlib_skip"))));
  for (const std::string& so : SharedObjects(root.At(stdlib)))
    TESS_RETURN_IF_ERROR(root.AddClosure(so, true));
  return Status::OK();
}

// The module, its package data and the files of the host's packages that
// satisfy extra_packages.
Status InstallModule(ImageRoot& root, const Value& plan) {
  const Value::Dict& fields = plan.as_dict();
  TESS_RETURN_IF_ERROR(root.Install(fields.at("api").as_string(), kApiPath, 0444));
  for (const Value& pair : fields.at("package_data").as_list()) {
    const std::vector<std::string> from_to = Strings(pair);
    if (fs::is_directory(from_to[0])) {
      TESS_RETURN_IF_ERROR(CopyTree(from_to[0], root.At(from_to[1]), {}));
    } else {
      TESS_RETURN_IF_ERROR(root.Install(from_to[0], from_to[1], 0777));
    }
  }
  for (const std::string& file : Strings(fields.at("extra_files"))) {
    struct stat info {};
    if (::stat(file.c_str(), &info) != 0) continue;  // a dangling link of the package
    TESS_RETURN_IF_ERROR(root.Install(file, file, info.st_mode & 07777));
    if (IsElf(file)) TESS_RETURN_IF_ERROR(root.AddClosure(file, true));
  }
  return Status::OK();
}

// Bytecode for everything Python will import, written now: the image's user
// cannot write __pycache__ at run time, so without it every start compiles
// again. Paths in it are the image's (-s strips the root).
void Compile(const std::string& python, const ImageRoot& root, const std::vector<std::string>& image_dirs) {
  std::vector<std::string> argv = {python, "-m", "compileall",          "-q", "-j",
                                   "0",    "-s", root.At("/").string(), "-p", "/"};
  for (const std::string& dir : image_dirs) argv.push_back(root.At(dir).string());
  auto compiled = platform::RunCaptured(argv);
  if (!compiled.ok() || compiled->exit_code != 0) {
    // Files that do not compile (a package's Python 2 leftovers) are imported
    // as they are, or never; that is no reason to fail the build.
    std::cerr << "tesscpp build: compileall left some files without bytecode\n";
  }
}

// The image answers `openapi`, which imports the module with everything it
// needs; otherwise it is removed again.
Status CheckImage(const std::string& tag) {
  const client::ContainerEngine engine = client::ContainerEngine::FromEnvironment();
  auto checked = engine.RunOk({"run", "--rm", "--network", "none", tag, "openapi"});
  if (checked.ok()) return Status::OK();
  (void)engine.RunOk({"rmi", "-f", tag});
  return checked.status().WithContext("build: the image of " + tag + " does not load its module (removed)");
}

}  // namespace

Result<std::string> BuildPythonImage(const ImageBuildOptions& options) {
  const fs::path dir = fs::absolute(options.component);
  const std::string python = PythonToRun();
  const std::string package_root = PackageRoot();
  if (package_root.empty()) {
    return Status::NotFound(
        "build: no tesscpp Python package beside ", options.cli,
        " to put into the image of a Python module (run the CLI of a wheel or a build tree)");
  }
  TESS_ASSIGN_OR_RETURN(const Value plan, ReadPlan(python, package_root, dir));
  const Value::Dict& fields = plan.as_dict();
  const std::string name = options.name.value_or(fields.at("name").as_string());
  const std::string version = options.version.value_or(fields.at("version").as_string());
  const std::string tag = options.tag.value_or(name + ":" + version);

  TESS_ASSIGN_OR_RETURN(ImageRoot root, ImageRoot::Make());
  const fs::path site = root.At(kSitePackages);
  TESS_RETURN_IF_ERROR(InstallRequirements(python, plan, site));
  TESS_RETURN_IF_ERROR(
      CopyTree(fs::path(package_root) / "tesscpp", site / "tesscpp", {"include", "bin", "lib/cmake"}));
  for (const std::string& so : SharedObjects(site / "tesscpp")) {
    (void)platform::RunCaptured({"strip", "--strip-debug", so});  // a RelWithDebInfo _tesscpp is mostly DWARF
  }
  TESS_RETURN_IF_ERROR(InstallPython(root, plan));
  TESS_RETURN_IF_ERROR(InstallModule(root, plan));
  for (const std::string& so : SharedObjects(site)) TESS_RETURN_IF_ERROR(root.AddClosure(so, true));
  TESS_RETURN_IF_ERROR(root.AddClosure(options.cli));
  TESS_RETURN_IF_ERROR(root.Install(options.cli, kImageCli, 0755));
  TESS_RETURN_IF_ERROR(root.Finish());
  const std::string stdlib = fields.at("python").as_dict().at("stdlib").as_string();
  Compile(python, root, {stdlib, std::string(kSitePackages), "/tesseract"});

  std::vector<std::string> changes = ContractChanges(name, version, fields.at("description").as_string(),
                                                     fields.at("metadata_json").as_string());
  for (const std::string& line :
       {"ENV TESSERACT_API_PATH=" + std::string(kApiPath), "ENV TESSCPP_COMPONENT=" + std::string(kApiPath),
        "ENV TESSCPP_PYTHON=" + DockerQuoted(fields.at("python").as_dict().at("executable").as_string()),
        "ENV PYTHONPATH=" + std::string(kSitePackages), std::string("ENV PYTHONNOUSERSITE=1"),
        std::string("ENV PYTHONUNBUFFERED=1")}) {
    changes.push_back(line);
  }
  for (const auto& [key, value] : fields.at("env").as_dict()) {
    changes.push_back("ENV " + key + "=" + DockerQuoted(value.as_string()));
  }
  TESS_ASSIGN_OR_RETURN(std::string imported, root.Import(tag, changes));
  if (!fields.at("skip_checks").as_bool()) TESS_RETURN_IF_ERROR(CheckImage(imported));
  return imported;
}

}  // namespace tesscpp::cli
