// gradient_report.h: how `tesscpp check-gradients` shows its results.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "tesscpp/gradient_check.h"

namespace tesscpp::cli {

/// \brief Per endpoint, tesseract-runtime's pass/fail lines, and for a failed
/// one a table of its first `max_failures` failures: input path, output path,
/// input index, the output element that disagrees most, the finite difference
/// ("expected"), the endpoint's value ("got") and their relative error. Ends
/// with the failure line when any endpoint failed. Returns whether all passed.
bool PrintGradientReport(const std::vector<EndpointCheck>& results, int64_t max_failures, std::ostream& out);

}  // namespace tesscpp::cli
