#include "check_gradients_command.h"

#include <unistd.h>

#include <charconv>
#include <iostream>
#include <map>
#include <utility>

#include "command_context.h"
#include "gradient_report.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/core/component_kind.h"

namespace tesscpp::cli {
namespace {

namespace core = tesscpp::core;

// The Tesseract a command names: a URL, a tesseract_api.py (served by
// `tesscpp serve`) or a component library (loaded in-process).
Result<tesscpp::Tesseract> Target(const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) {
    return tesscpp::Tesseract::FromUrl(target);
  }
  if (core::ComponentKindOf(target) == core::ComponentKind::kPythonModule) {
    return tesscpp::Tesseract::FromSource(target);
  }
  return tesscpp::Tesseract::FromLibrary(target);
}

Result<std::map<std::string, double>> ParseEpsFor(const std::vector<std::string>& items) {
  std::map<std::string, double> steps;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--eps-for '", item, "': expected PATH=VALUE");
    }
    double step = 0;
    const char* end = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(item.data() + eq + 1, end, step);
    if (ec != std::errc() || ptr != end) {
      return Status::InvalidArgument("--eps-for '", item, "': '", item.substr(eq + 1), "' is not a number");
    }
    steps[item.substr(0, eq)] = step;
  }
  return steps;
}

}  // namespace

int CheckGradients(CheckGradientsOptions o) {
  const auto fail = [](const Status& status) {
    Fail(status);
    return 2;
  };
  auto steps = ParseEpsFor(o.eps_for);
  if (!steps.ok()) return fail(steps.status());
  o.check.eps_for = *std::move(steps);
  if (o.seed) o.check.seed = static_cast<uint64_t>(*o.seed);
  auto payload = ReadClientPayload(o.payload);
  if (!payload.ok()) return fail(payload.status());
  auto tesseract = Target(o.target);
  if (!tesseract.ok()) return fail(tesseract.status());
  // Progress only where someone watches: a terminal on stderr.
  const bool live = o.show_progress && ::isatty(STDERR_FILENO) == 1;
  tesscpp::GradientCheckProgress progress;
  if (live) {
    progress = [](const std::string& endpoint, int64_t done, int64_t total) {
      std::cerr << "\rChecking gradients for " << endpoint << "... " << done << "/" << total
                << (done == total ? "\r\033[K" : "") << std::flush;
    };
  }
  auto results = tesscpp::CheckGradients(*tesseract, *payload, o.check, progress);
  if (!results.ok()) return fail(results.status());
  return tesscpp::cli::PrintGradientReport(*results, o.max_failures, std::cout) ? 0 : 1;
}

}  // namespace tesscpp::cli
