// gradient_check.h: a Tesseract's derivative endpoints against central finite
// differences of its apply, as tesseract-runtime's check-gradients does
// (docs/check-gradients.md), for any Tesseract a client reaches: a component
// library in-process, a tesscpp server, or tesseract-core's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tesscpp/client.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp {

struct GradientCheckOptions {
  /// Concrete differentiable input / output paths to check (empty: all the
  /// payload has); endpoints among jacobian, jacobian_vector_product and
  /// vector_jacobian_product (empty: every one the Tesseract has).
  std::vector<std::string> input_paths;
  std::vector<std::string> output_paths;
  std::vector<std::string> endpoints;
  /// Absolute step of the central difference, and per input path overrides.
  double eps = 1e-4;
  std::map<std::string, double> eps_for;
  /// A check passes when |fd - grad| <= atol + rtol * |grad| element-wise
  /// (numpy.allclose with the endpoint's value as the reference).
  double rtol = 0.1;
  double atol = 1e-8;
  /// Sampled input elements per endpoint, split over the inputs by size.
  int64_t max_evals = 1000;
  /// vector_jacobian_product: output elements swept per pair (nullopt: all).
  std::optional<int64_t> max_output_samples;
  /// nullopt: a random seed.
  std::optional<uint64_t> seed;
};

/// \brief One check that failed: the endpoint's value and the finite
/// difference for d(output)/d(input[index]), or the error that stopped it.
struct GradientCheckFailure {
  std::string input_path;
  std::string output_path;
  std::vector<int64_t> index;    ///< into the input (empty for a scalar)
  std::vector<double> endpoint;  ///< over the output's elements (C order)
  std::vector<double> finite_difference;
  std::vector<int64_t> compared;  ///< output elements compared (VJP sampling), empty: all
  std::string error;              ///< set when a call failed instead
};

struct EndpointCheck {
  std::string endpoint;
  int64_t checks = 0;
  std::vector<GradientCheckFailure> failures;
  bool passed() const { return failures.empty(); }
};

/// \brief Called before each check of an endpoint: (endpoint, done, total).
using GradientCheckProgress = std::function<void(const std::string&, int64_t, int64_t)>;

/// \brief Checks every requested endpoint of `tesseract` at `payload`
/// ({"inputs": {...}}). Errors (kInvalidArgument naming the field) for a
/// payload without inputs, an unknown path or endpoint, a Tesseract without
/// derivative endpoints, a differentiable input that is not a floating array,
/// or an apply that fails at the payload itself; failures of the checks
/// themselves are results, not errors.
Result<std::vector<EndpointCheck>> CheckGradients(const Tesseract& tesseract, const Value& payload,
                                                  const GradientCheckOptions& options,
                                                  const GradientCheckProgress& progress = nullptr);

}  // namespace tesscpp
