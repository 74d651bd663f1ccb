// finite_differences.h: derivative endpoints from apply by finite
// differences, for components without analytic ones (a legacy simulator gets
// jacobian, JVP and VJP at once), with the semantics of tesseract-core's
// finite_difference_jacobian / _jvp / _vjp helpers (docs/autodiff.md,
// "Finite differences").
//
//   tesscpp::Component c(...);
//   ... declare fields, c.Apply(...) ...
//   tesscpp::DeriveByFiniteDifferences(c, {.algorithm = tesscpp::FdAlgorithm::kCentral, .eps = 1e-6});
//
// Each derivative call runs apply on perturbed copies of the inputs (apply
// must be deterministic and free of side effects that matter): central
// differences cost 2 applies per input element, forward 1 (plus one at the
// point), the stochastic algorithm (SPSA) 2 per sample whatever the input
// size. Endpoints the component already has are kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tesscpp/component.h"

namespace tesscpp {

enum class FdAlgorithm {
  kCentral,     ///< (f(x + h) - f(x - h)) / 2h per element
  kForward,     ///< (f(x + h) - f(x)) / h per element
  kStochastic,  ///< SPSA: random ±1 directions, 2 applies per sample (JVP: central)
};

struct FiniteDifferences {
  FdAlgorithm algorithm = FdAlgorithm::kCentral;
  /// The absolute step for every differentiated input...
  double eps = 1e-4;
  /// ...or one per input path: when set, a request must differentiate exactly
  /// these paths (an error naming the missing or extra ones otherwise).
  std::map<std::string, double> eps_by_path;
  /// SPSA's samples; default max(10, floor(sqrt(input elements))). With as
  /// many samples as elements or more, central differences are used instead.
  std::optional<int64_t> num_samples;
  /// SPSA's seed: NumPy's RandomState(seed) directions, so a single
  /// differentiated input gets tesseract-core's exact estimate; none: random.
  std::optional<uint32_t> seed;
};

/// \brief Gives `c` jacobian, jacobian_vector_product and
/// vector_jacobian_product computed from its apply (set it first: without
/// apply this aborts, a mistake in the component), keeping any it has.
void DeriveByFiniteDifferences(Component& c, FiniteDifferences options = {});

struct HvpFiniteDifferences {
  /// The step along the tangent v, relative to its largest element: the VJP
  /// is evaluated at x ± (eps / max|v|) v.
  double eps = 1e-6;
};

/// \brief Gives `c` tesscpp's hessian_vector_product as central differences
/// of its own vector_jacobian_product (two VJPs per call; set or derive the
/// VJP first: without one this aborts), keeping one it has. The VJP runs at
/// points whose differentiated inputs are rounded to their dtypes: use it for
/// float64 inputs, or raise eps for float32 ones (docs/derivatives.md).
void DeriveHvpByFiniteDifferences(Component& c, HvpFiniteDifferences options = {});

}  // namespace tesscpp
