// in_child.h: a test's body run in a forked child.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace tesscpp::testing {

/// \brief Runs `body` in a forked child that ends with _exit (none of the
/// parent's objects are destroyed there, and gtest does not run twice).
/// Empty when `body` returned true, else what went wrong.
template <typename Body>
std::string FailureInChild(Body body) {
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) ::_exit(body() ? 0 : 1);
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return "waitpid failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return "the child ended with status " + std::to_string(status);
}

}  // namespace tesscpp::testing
