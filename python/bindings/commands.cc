#include "commands.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "python_component.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

// os.fork's protocol around the server's fork of a worker: the forking
// thread takes the GIL, CPython prepares (its import lock, at-fork handlers
// registered with os.register_at_fork), and each side is set right after.
http::HttpServerOptions::ForkHooks CPythonForkHooks() {
  auto state = std::make_shared<PyGILState_STATE>();
  http::HttpServerOptions::ForkHooks hooks;
  hooks.before = [state] {
    *state = PyGILState_Ensure();
    PyOS_BeforeFork();
  };
  hooks.parent = [state] {
    PyOS_AfterFork_Parent();
    PyGILState_Release(*state);
  };
  hooks.child = [state] {
    PyOS_AfterFork_Child();
    PyGILState_Release(*state);
  };
  return hooks;
}

int RunCommands(std::vector<std::string> args, std::vector<std::string> host_command) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  cli::PythonHost host{OpenPythonModule, CPythonForkHooks(), std::move(host_command)};
  // The server's threads take the GIL only to enter Python.
  nb::gil_scoped_release release;
  return cli::Main(static_cast<int>(args.size()), argv.data(), &host);
}

}  // namespace

void BindCommands(nb::module_& m) {
  m.def("_run_commands", &RunCommands, nb::arg("argv"), nb::arg("host_command"),
        "Runs a tesscpp command (argv[0] the program) with this interpreter hosting Python modules; "
        "host_command runs the same in a fresh process, before the arguments (empty: unknown). "
        "Returns the exit status (most commands exit the process instead).");
}

}  // namespace tesscpp::bindings
