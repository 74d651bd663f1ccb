// check_gradients_command.h: `tesscpp check-gradients`, tesseract-runtime
// check-gradients for any Tesseract (tesscpp/gradient_check.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tesscpp/gradient_check.h"

namespace tesscpp::cli {

struct CheckGradientsOptions {
  std::string target;
  std::string payload;
  tesscpp::GradientCheckOptions check;
  std::vector<std::string> eps_for;
  std::optional<int64_t> seed;
  int64_t max_failures = 10;
  bool show_progress = true;
};

// Exit status: 0 every check passed, 1 some failed, 2 the check could not run.
int CheckGradients(CheckGradientsOptions o);

}  // namespace tesscpp::cli
