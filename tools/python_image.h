// python_image.h: `tesscpp build DIR` for a folder holding tesseract_api.py
// and tesseract_config.yaml: an image with a Python interpreter, the
// module's requirements, tesseract-core and tesscpp, served by tesscpp's
// runtime (docs/containers.md, "Images of Python modules").
#pragma once

#include <string>

#include "image_build.h"
#include "tesscpp/result.h"

namespace tesscpp::cli {

/// \brief Builds and loads the image of the Python module in
/// `options.component` (a folder); returns the tag. The configuration is
/// read and checked by tesseract-core's own model, in the Python that hosts
/// modules (python_module.h), which also installs the requirements with pip
/// from the index it reaches. Keys tesscpp cannot honour offline are refused
/// by name; nothing is imported unless every step succeeded and, unless the
/// configuration skips checks, the image prints its OpenAPI document.
Result<std::string> BuildPythonImage(const ImageBuildOptions& options);

}  // namespace tesscpp::cli
