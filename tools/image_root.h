// image_root.h: the root filesystem of an image `tesscpp build` makes, and
// its import into the engine (docs/containers.md says why `docker import`):
// what images of C++ components and of Python modules share.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::cli {

/// \brief Where things go in every image.
inline constexpr std::string_view kImageCli = "/usr/local/bin/tesscpp";
inline constexpr std::string_view kImageLibDir = "/usr/local/lib";
inline constexpr std::string_view kImageInputDir = "/tesseract/input_data";
inline constexpr std::string_view kImageOutputDir = "/tesseract/output_data";
inline constexpr int kImageUid = 1000;  ///< the default user (tesseract-core's --user overrides it)

/// \brief A root filesystem being assembled in a temporary folder, removed
/// with everything in it when this goes (so a failed build leaves nothing).
class ImageRoot {
 public:
  static Result<ImageRoot> Make();
  ImageRoot(ImageRoot&& other) noexcept;
  ImageRoot& operator=(ImageRoot&&) = delete;
  ImageRoot(const ImageRoot&) = delete;
  ImageRoot& operator=(const ImageRoot&) = delete;
  ~ImageRoot();

  /// \brief The host path of `image_path` (an absolute path in the image).
  std::filesystem::path At(std::string_view image_path) const;
  /// \brief A scratch folder beside the root, not part of the image.
  std::filesystem::path Scratch(std::string_view name) const;

  /// \brief Copies `from` to `image_path` with `mode`, without debug
  /// information when it is an ELF file strip understands.
  Status Install(const std::string& from, std::string_view image_path, mode_t mode) const;
  Status WriteFile(std::string_view image_path, const std::string& text) const;

  /// \brief Notes the shared libraries `file` loads (ldd) and the dynamic
  /// loader. Libraries found inside the root already (a wheel's own, by its
  /// RPATH) are not noted. With `lenient`, a library ldd cannot find is
  /// reported on stderr instead of failing: an optional extension module
  /// of a Python package may need one its import would ask for.
  Status AddClosure(const std::string& file, bool lenient = false);

  /// \brief Installs the noted libraries into kImageLibDir and the loader at
  /// its own path, the users (root, tesseract) and the folders any user may
  /// write (/tmp, the input and output folders).
  Status Finish();

  /// \brief Packs the root and imports it as `tag` with the Dockerfile
  /// instructions `changes`; returns the tag.
  Result<std::string> Import(const std::string& tag, const std::vector<std::string>& changes) const;

 private:
  explicit ImageRoot(std::filesystem::path scratch) : scratch_(std::move(scratch)) {}
  std::filesystem::path scratch_;
  std::map<std::string, std::string> libs_;  // soname -> host path
  std::string loader_;
};

/// \brief A Dockerfile ENV/LABEL value: quoted, with the reference's "\n" for
/// newlines (TESSERACT_DESCRIPTION is read back that way).
std::string DockerQuoted(const std::string& value);

/// \brief The instructions every image gets: tesseract-core's contract
/// (docs/containers.md), the metadata label and the CLI as entry point.
std::vector<std::string> ContractChanges(const std::string& name, const std::string& version,
                                         const std::string& description, const std::string& metadata_json);

}  // namespace tesscpp::cli
