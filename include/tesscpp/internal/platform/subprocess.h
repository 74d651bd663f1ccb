// subprocess.h: running another program to completion (internal).
#pragma once

#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::platform {

/// \brief What a finished program printed and how it ended.
struct Finished {
  int exit_code;    ///< its exit status; 128 + N when killed by signal N
  std::string out;  ///< its stdout
  std::string err;  ///< its stderr
};

/// \brief Runs `argv` (argv[0] looked up on PATH) with this process's
/// environment and stdin from /dev/null, to completion, both streams
/// captured. kNotFound when it cannot be started; a non-zero exit is not an
/// error here (see RunChecked).
///
/// Hand-written over posix_spawnp: Boost.Process v1 needs Boost.Filesystem,
/// which is not among our dependencies, and Boost 1.81's v2 does not build
/// with std::filesystem.
Result<Finished> RunCaptured(const std::vector<std::string>& argv);

/// \brief RunCaptured, and kInternal naming the command and its stderr when it
/// exits non-zero. Returns its stdout.
Result<std::string> RunChecked(const std::vector<std::string>& argv);

/// \brief Runs `argv` with this process's stdin, stdout and stderr, to
/// completion; returns its exit status (128 + N when killed by signal N).
Result<int> RunAttached(const std::vector<std::string>& argv);

/// \brief "a b c": argv as one line, for messages.
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace tesscpp::platform
