// module_runtime.h: a tesseract_api.py served by tesscpp's runtime inside
// this interpreter, without a socket (_ModuleRuntime): a request's method,
// target, content type and body in, the status and body the server would
// write out. What the Python host's fuzz target drives
// (tests/fuzz/fuzz_python_host.py): every byte a client can send takes the
// same path through the JSON reader, the module's validation and the answer
// as over HTTP.
#pragma once

#include <nanobind/nanobind.h>

namespace tesscpp::bindings {

void BindModuleRuntime(nanobind::module_& m);

}  // namespace tesscpp::bindings
