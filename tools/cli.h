// cli.h: the tesscpp command line, as a function, so that two programs run
// the same commands: the `tesscpp` executable (main.cc) and the Python
// module, which runs them for a tesseract_api.py in a process hosting CPython
// (docs/python-host.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tesscpp/internal/http/http_server.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"

namespace tesscpp::cli {

/// \brief What a process that hosts Python lends the commands.
struct PythonHost {
  /// Imports the tesseract_api.py at `path` and builds its endpoints for
  /// `config` (the settings the runtime will serve with).
  std::function<Result<std::shared_ptr<const ServedComponent>>(const std::string& path,
                                                               const RuntimeConfig& config)>
      open_module;
  /// Run around the fork of each worker process.
  http::HttpServerOptions::ForkHooks fork_hooks;
  /// The command that runs these commands in a fresh host process, before
  /// their arguments (the interpreter's absolute path, "-m", the host
  /// module): how workers are started for a module that cannot be forked.
  /// Empty: such a module gets no workers.
  std::vector<std::string> command;
};

/// \brief Runs the command in `argv` (argv[0] the program) and returns its
/// exit status. With `host` null, a command naming a tesseract_api.py execs
/// the Python that hosts it (python_module.h); otherwise `host` opens it.
int Main(int argc, char** argv, const PythonHost* host);

}  // namespace tesscpp::cli
