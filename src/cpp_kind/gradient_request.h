// gradient_request.h: validating the bodies of /jacobian,
// /jacobian_vector_product and /vector_jacobian_product as tesseract-core's
// generated request models do, and of tesscpp's /hessian_vector_product
// (both vectors) by the same rules: differentiable-path sets (literals and
// wildcard patterns, at least one item), tangent and cotangent vectors checked
// against those sets and shaped like the arrays they pair with.
#pragma once

#include <vector>

#include "cpp_kind/endpoint_schemas.h"
#include "schema/validate.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/model.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::cpp_kind {

struct GradientModels {
  core::EndpointId endpoint;  ///< one of the gradients (EndpointInfo::is_gradient)
  /// The renamed input model (Jacobian_InputSchema, Jvp_InputSchema, ...).
  std::shared_ptr<const ModelSchema> inputs;
  std::vector<DifferentiablePath> input_paths;
  std::vector<DifferentiablePath> output_paths;
};

struct GradientRequest {
  Value inputs;  ///< validated inputs
  PathSet input_set;
  PathSet output_set;
  TensorMap tangent;    ///< keyed by input_set (jvp, hvp); else empty
  TensorMap cotangent;  ///< keyed by output_set (vjp, hvp); else empty
};

/// \brief Validates a request body. kValidationError with pydantic-shaped
/// issues (locs relative to the body) on failure.
Result<GradientRequest> ValidateGradientRequest(const GradientModels& models, const Value& body,
                                                const schema::ValidateOptions& options = {});

/// \brief Checks an endpoint's result against the request (keys equal to the
/// requested sets, shapes as declared) and casts it where the schema fixes a
/// dtype. kInternal naming the mismatch: the component broke its contract.
Result<Value> ValidateJacobianResult(const GradientModels& models, const GradientRequest& request,
                                     const JacobianMap& result);
Result<Value> ValidateProductResult(const GradientModels& models, const GradientRequest& request,
                                    const TensorMap& result);

}  // namespace tesscpp::cpp_kind
