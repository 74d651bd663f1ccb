// image_build.h: `tesscpp build`, a container image of one component.
#pragma once

#include <optional>
#include <string>

#include "tesscpp/result.h"

namespace tesscpp::cli {

struct ImageBuildOptions {
  std::string component;  ///< lib<name>.so, a project folder to build first, or a Python module's folder
  std::optional<std::string> tag;   ///< default <name>:<version>
  std::optional<std::string> name;  ///< TESSERACT_NAME; default the component's
  std::optional<std::string> version;
  std::string cli;  ///< the tesscpp executable to put in the image
};

/// \brief Builds and loads an image holding the CLI, libtesscpp.so, the
/// component and exactly the shared libraries they load (their ldd closure),
/// with tesseract-core's image contract (docs/containers.md): a root
/// filesystem imported with `docker import` (no registry, no builder, no
/// base image). The engine is $TESSERACT_DOCKER_EXECUTABLE (default docker),
/// reaching $DOCKER_HOST. A project folder is first built (Release, in
/// <dir>/build-image) against the SDK beside the CLI or in $tesscpp_DIR.
/// Returns the tag.
Result<std::string> BuildImage(const ImageBuildOptions& options);

}  // namespace tesscpp::cli
