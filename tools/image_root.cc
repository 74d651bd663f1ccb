// image_root.cc: the root filesystem of an image and its import. ldd, strip,
// tar and the engine are run as programs.
#include "image_root.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "tesscpp/internal/client/container_engine.h"
#include "tesscpp/internal/platform/file.h"
#include "tesscpp/internal/platform/subprocess.h"

namespace tesscpp::cli {
namespace {

namespace fs = std::filesystem;

Status MakeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return ec ? Status::IoError("cannot create ", dir.string(), ": ", ec.message()) : Status::OK();
}

bool IsInside(const std::string& path, const fs::path& dir) {
  const std::string prefix = dir.string() + "/";
  return path.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<ImageRoot> ImageRoot::Make() {
  TESS_ASSIGN_OR_RETURN(std::string path, platform::MakeTempDir("tesscpp_build_"));
  ImageRoot root{fs::path(path)};
  TESS_RETURN_IF_ERROR(MakeDirs(root.scratch_ / "root"));
  return root;
}

ImageRoot::ImageRoot(ImageRoot&& other) noexcept
    : scratch_(std::exchange(other.scratch_, {})),
      libs_(std::move(other.libs_)),
      loader_(std::move(other.loader_)) {}

ImageRoot::~ImageRoot() {
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
}

fs::path ImageRoot::At(std::string_view image_path) const {
  return scratch_ / "root" / fs::path(image_path).relative_path();
}

fs::path ImageRoot::Scratch(std::string_view name) const { return scratch_ / name; }

Status ImageRoot::Install(const std::string& from, std::string_view image_path, mode_t mode) const {
  const fs::path to = At(image_path);
  TESS_RETURN_IF_ERROR(MakeDirs(to.parent_path()));
  // The CLI and libtesscpp of a RelWithDebInfo build are mostly DWARF.
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

Status ImageRoot::WriteFile(std::string_view image_path, const std::string& text) const {
  const fs::path path = At(image_path);
  TESS_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return out ? Status::OK() : Status::IoError("cannot write ", path.string());
}

Status ImageRoot::AddClosure(const std::string& file, bool lenient) {
  TESS_ASSIGN_OR_RETURN(std::string listing, platform::RunChecked({"ldd", file}));
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    std::string arrow;
    std::string path;
    words >> name >> arrow >> path;
    if (arrow == "=>") {
      if (path == "not" || path.empty()) {
        if (!lenient) return Status::NotFound(file, " needs ", name, ", which is not found");
        std::cerr << "tesscpp build: " << file << " needs " << name
                  << ", which this machine lacks; importing it in the image will fail\n";
      } else if (!IsInside(path, scratch_)) {
        libs_.emplace(name, path);
      }
    } else if (!name.empty() && name[0] == '/') {
      loader_ = name;  // the interpreter, by absolute path
    }                  // else: the vDSO, which the kernel provides
  }
  return Status::OK();
}

Status ImageRoot::Finish() {
  if (loader_.empty()) return Status::Internal("ldd named no dynamic loader");
  TESS_RETURN_IF_ERROR(Install(loader_, loader_, 0755));
  for (const auto& [soname, path] : libs_) {
    TESS_RETURN_IF_ERROR(Install(path, (fs::path(kImageLibDir) / soname).string(), 0755));
  }
  const std::string uid = std::to_string(kImageUid);
  TESS_RETURN_IF_ERROR(WriteFile("/etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\ntesseract:x:" + uid +
                                                    ":" + uid + ":tesseract:/tesseract:/sbin/nologin\n"));
  TESS_RETURN_IF_ERROR(WriteFile("/etc/group", "root:x:0:\ntesseract:x:" + uid + ":\n"));
  // Any user tesseract-core runs the container as (-u <host uid>) may write
  // results and scratch files.
  for (std::string_view dir : {std::string_view("/tmp"), kImageInputDir, kImageOutputDir}) {
    const fs::path path = At(dir);
    TESS_RETURN_IF_ERROR(MakeDirs(path));
    if (::chmod(path.c_str(), 01777) != 0)
      return Status::IoError("chmod ", path.string(), ": ", std::strerror(errno));
  }
  return Status::OK();
}

Result<std::string> ImageRoot::Import(const std::string& tag, const std::vector<std::string>& changes) const {
  const fs::path archive = scratch_ / "rootfs.tar";
  TESS_RETURN_IF_ERROR(platform::RunChecked({"tar", "--numeric-owner", "--owner=0", "--group=0", "-C",
                                             (scratch_ / "root").string(), "-cf", archive.string(), "."})
                           .status());
  std::vector<std::string> args = {"import"};
  for (const std::string& change : changes) args.insert(args.end(), {"--change", change});
  args.insert(args.end(), {archive.string(), tag});
  auto imported = client::ContainerEngine::FromEnvironment().RunOk(args);
  if (!imported.ok()) return imported.status().WithContext("importing the image");
  return tag;
}

std::string DockerQuoted(const std::string& value) {
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

std::vector<std::string> ContractChanges(const std::string& name, const std::string& version,
                                         const std::string& description, const std::string& metadata_json) {
  const std::string uid = std::to_string(kImageUid);
  return {
      "ENV TESSERACT_NAME=" + DockerQuoted(name),
      "ENV TESSERACT_VERSION=" + DockerQuoted(version),
      "ENV TESSERACT_DESCRIPTION=" + DockerQuoted(description),
      "ENV LD_LIBRARY_PATH=" + std::string(kImageLibDir),
      "ENV TESSERACT_INPUT_PATH=" + std::string(kImageInputDir),
      "ENV TESSERACT_OUTPUT_PATH=" + std::string(kImageOutputDir),
      "ENV HOME=/tmp",
      "LABEL ai.pasteurlabs.tesseract.metadata=" + DockerQuoted(metadata_json),
      "WORKDIR /tesseract",
      "EXPOSE 8000",
      "USER " + uid + ":" + uid,
      R"(ENTRYPOINT [")" + std::string(kImageCli) + R"("])",
      R"(CMD ["--help"])",
  };
}

}  // namespace tesscpp::cli
