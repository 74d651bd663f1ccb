// The endpoint table. The docstrings are the runtime's own (tesseract-core
// 1.15, runtime/core.py and runtime/serve.py), kept raw — indentation and
// trailing spaces included — because the OpenAPI document carries them
// cleaned exactly as Python's inspect.cleandoc would.
#include "tesscpp/internal/core/endpoint_table.h"

namespace tesscpp::core {
namespace {

constexpr std::string_view kApplyDoc = "Apply the Tesseract to the input data.";
constexpr std::string_view kJacobianDoc =
    "Computes the Jacobian of the Tesseract.\n\n"
    "            Differentiates ``jac_outputs`` with respect to ``jac_inputs``, at the point ``inputs``.\n"
    "            ";
constexpr std::string_view kJvpDoc =
    "Compute the Jacobian vector product of the Tesseract at the input data.\n\n"
    "            Evaluates the Jacobian vector product between the Jacobian given by ``jvp_outputs``\n"
    "            with respect to ``jvp_inputs`` at the point ``inputs`` and the given tangent vector.\n"
    "            ";
constexpr std::string_view kVjpDoc =
    "Compute the Jacobian vector product of the Tesseract at the input data.\n\n"
    "            Computes the vector Jacobian product between the Jacobian given by ``vjp_outputs``\n"
    "            with respect to ``vjp_inputs`` at the point ``inputs`` and the given cotangent vector.\n"
    "            ";
// tesscpp's own, written in the style of its neighbours (cleaned the same way).
constexpr std::string_view kHvpDoc =
    "Compute the Hessian vector product of the Tesseract at the input data.\n\n"
    "            Computes the derivative, along the tangent vector on ``hvp_inputs``, of the vector "
    "Jacobian\n"
    "            product of the cotangent vector on ``hvp_outputs`` with respect to ``hvp_inputs``, at the\n"
    "            point ``inputs`` (a tesscpp endpoint, not part of tesseract-core).\n"
    "            ";
constexpr std::string_view kHealthDoc = "Get health status of the Tesseract instance.";
constexpr std::string_view kAbstractEvalDoc =
    "Perform abstract evaluation of the Tesseract on the input data.";
constexpr std::string_view kTestDoc = R"(Run a single regression test against a Tesseract endpoint.

        Tests an endpoint by calling it with specified inputs and comparing outputs
        against expected values or verifying expected exceptions are raised.

        Args:
            payload: Test specification containing:
                - endpoint: Name of endpoint to test (e.g., "apply", "jacobian")
                - payload: Input data for the endpoint
                - expected_outputs: Expected output data (mutually exclusive with expected_exception)
                - expected_exception: Expected exception type or name (mutually exclusive with expected_outputs)
                - expected_exception_regex: Optional regex pattern for exception message
                - atol: Absolute tolerance for numeric comparisons (default: 1e-8)
                - rtol: Relative tolerance for numeric comparisons (default: 1e-5)

        Returns:
            TestOutputSchema with:
                - status: "passed" | "failed" | "error"
                - message: Empty for passed tests, error details for failed/error
                - endpoint: Name of the tested endpoint

        Note:
            This endpoint is designed for testing and CI/CD workflows.
            All outcomes return HTTP 200 with status in the response body regardless of success/failure.
        )";

using K = EndpointKind;
using E = EndpointId;

constexpr std::array<EndpointInfo, kEndpointCount> kTable{{
    {E::kApply, "apply", "apply", "apply", K::kWrapped, "POST", "Apply_", "ApplyInputSchema",
     "ApplyOutputSchema", "", "", "", "", kApplyDoc},
    {E::kJacobian, "jacobian", "jacobian", "Jacobian", K::kWrapped, "POST", "Jacobian_",
     "JacobianInputSchema", "JacobianOutputSchema", "jac", "Jacobian", "", "", kJacobianDoc},
    {E::kJacobianVectorProduct, "jacobian_vector_product", "jacobian-vector-product",
     "Jacobian Vector Product (JVP)", K::kWrapped, "POST", "Jvp_", "JVPInputSchema", "JVPOutputSchema", "jvp",
     "JVP", "tangent_vector", "", kJvpDoc},
    {E::kVectorJacobianProduct, "vector_jacobian_product", "vector-jacobian-product",
     "Vector Jacobian Product (VJP)", K::kWrapped, "POST", "Vjp_", "VJPInputSchema", "VJPOutputSchema", "vjp",
     "VJP", "", "cotangent_vector", kVjpDoc},
    {E::kHealth, "health", "health", "health", K::kRuntime, "GET", "", "", "", "", "", "", "", kHealthDoc},
    {E::kAbstractEval, "abstract_eval", "abstract-eval", "abstract_eval", K::kPlain, "POST", "AbstractEval_",
     "AbstractInputSchema", "AbstractOutputSchema", "", "", "", "", kAbstractEvalDoc},
    {E::kTest, "test", "test", "The test endpoint", K::kRuntime, "POST", "", "TestSpec", "TestOutputSchema",
     "", "", "", "", kTestDoc},
    {E::kHessianVectorProduct, "hessian_vector_product", "hessian-vector-product",
     "Hessian Vector Product (HVP)", K::kWrapped, "POST", "Hvp_", "HVPInputSchema", "HVPOutputSchema", "hvp",
     "HVP", "tangent_vector", "cotangent_vector", kHvpDoc},
}};

constexpr bool InIdOrder() {
  for (int i = 0; i < kEndpointCount; ++i) {
    if (static_cast<int>(kTable[i].id) != i) return false;
  }
  return true;
}
static_assert(InIdOrder(), "the endpoint table is indexed by EndpointId");

}  // namespace

const std::array<EndpointInfo, kEndpointCount>& Endpoints() { return kTable; }

const EndpointInfo& Endpoint(EndpointId id) { return kTable[static_cast<int>(id)]; }

bool IsServed(const EndpointInfo& endpoint, bool implements, bool debug) {
  if (endpoint.kind != EndpointKind::kRuntime) return implements;
  return endpoint.id != EndpointId::kTest || debug;
}

std::optional<EndpointId> FindEndpoint(std::string_view name) {
  for (const EndpointInfo& e : kTable) {
    if (e.name == name) return e.id;
  }
  return std::nullopt;
}

}  // namespace tesscpp::core
