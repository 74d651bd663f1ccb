// commands.h: the tesscpp commands run from Python (_run_commands), so that
// a tesseract_api.py is served by tesscpp's runtime in a process that hosts
// CPython (tesscpp/_python_host.py, docs/python-host.md).
#pragma once

#include <nanobind/nanobind.h>

namespace tesscpp::bindings {

void BindCommands(nanobind::module_& m);

}  // namespace tesscpp::bindings
