// python_component.h: a tesseract_api.py as a component kind the runtime
// serves (ServedComponent), so that tesscpp's server, codecs and transports
// serve Python modules. The module is imported, and its endpoints built, by
// tesseract-core's own code in tesscpp/_python_host.py; this class carries
// requests to it and answers back, holding the GIL only inside Python.
#pragma once

#include <memory>
#include <string>

#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/internal/runtime/served_component.h"
#include "tesscpp/result.h"

namespace tesscpp::bindings {

/// \brief Imports the module at `path` for `config`. Errors: the module does
/// not import, lacks what tesseract-runtime requires of it, or has a schema
/// tesseract-core cannot build (the Python exception's type and message,
/// traceback on stderr). Takes the GIL; callable without it.
Result<std::shared_ptr<const ServedComponent>> OpenPythonModule(const std::string& path,
                                                                const RuntimeConfig& config);

}  // namespace tesscpp::bindings
