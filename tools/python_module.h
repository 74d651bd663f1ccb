// python_module.h: how the tesscpp executable serves a tesseract_api.py. It
// links no Python (a Python built without libpython, as many are, could not
// be embedded, and a module needs its own environment's interpreter), so it
// execs the Python that will host the module: `python -m tesscpp._python_host`
// with the same arguments, which runs the same commands with CPython in the
// process (docs/python-host.md §1).
#pragma once

#include <string>
#include <string_view>

#include "tesscpp/status.h"

namespace tesscpp::cli {

/// \brief The Python that hosts modules: $TESSCPP_PYTHON, else the build's
/// Python where it exists, else python3 on PATH.
std::string PythonToRun();

/// \brief The folder holding the tesscpp package that belongs to this
/// executable (a wheel's site-packages, or <build>/python); empty when none.
std::string PackageRoot();

/// \brief Replaces this process by the Python host running `argv[1:]`: the
/// interpreter is $TESSCPP_PYTHON, else the build's Python where it exists,
/// else python3 on PATH; the tesscpp package beside this executable is put
/// first on PYTHONPATH. Returns only when the exec failed.
Status ExecPythonHost(int argc, char** argv);

}  // namespace tesscpp::cli
