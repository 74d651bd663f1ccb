// endpoint_table.h: the endpoints of tesseract-core 1.15's runtime and
// tesscpp's own, one row each — the one place that names them (internal).
//
// Everything that lists, routes, documents or calls endpoints (the runtime,
// the OpenAPI generator, the client, the CLI, the Python bindings, the
// metrics) iterates this table, so a new endpoint is one row here plus its
// implementation (docs/architecture.md, "Adding an endpoint").
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace tesscpp::core {

/// \brief The endpoints: the reference's, in the order its OpenAPI document
/// lists their paths, then tesscpp's own.
enum class EndpointId : int {
  kApply,
  kJacobian,
  kJacobianVectorProduct,
  kVectorJacobianProduct,
  kHealth,
  kAbstractEval,
  kTest,
  kHessianVectorProduct,  ///< tesscpp's: docs/derivatives.md
  kCount,                 ///< not an endpoint: how many there are (a new one goes above)
};
inline constexpr int kEndpointCount = static_cast<int>(EndpointId::kCount);

/// \brief How the runtime runs an endpoint.
enum class EndpointKind {
  /// apply and the gradients: a run directory, stdio captured into its log,
  /// the answer encoded as the client's Accept asks.
  kWrapped,
  /// abstract_eval: validated and called, answered as plain JSON.
  kPlain,
  /// health and test: answered by the runtime itself, not by the component.
  kRuntime,
};

struct EndpointInfo {
  EndpointId id;
  std::string_view name;     ///< "jacobian_vector_product": the path without '/', the API name
  std::string_view command;  ///< "jacobian-vector-product": the CLI's one-shot command
  /// How tesseract-core's SDK names it in "... not implemented for this Tesseract.".
  std::string_view title;
  EndpointKind kind;
  std::string_view method;  ///< "POST" or "GET"
  /// The prefix of the component models derived for its request ("Jvp_"),
  /// empty where it has none.
  std::string_view model_prefix;
  std::string_view request_model;   ///< "JVPInputSchema"; empty for GET
  std::string_view response_model;  ///< "JVPOutputSchema"; empty where FastAPI names it
  /// Gradients: the prefix of the path-set fields ("jvp" → jvp_inputs,
  /// jvp_outputs), the noun of their descriptions, and the vector fields:
  /// a tangent is keyed by the input set, a cotangent by the output set.
  std::string_view short_name;
  std::string_view noun;
  std::string_view tangent_field;    ///< "tangent_vector" or empty
  std::string_view cotangent_field;  ///< "cotangent_vector" or empty
  /// The runtime's own docstring of the endpoint function (core.py), raw: the
  /// author's docstring is appended after a blank line.
  std::string_view doc;

  bool is_gradient() const { return !short_name.empty(); }
  /// \brief Whether its answer is keyed by the input set (a product that
  /// takes a cotangent: VJP, HVP) rather than by the output set (JVP).
  bool answers_inputs() const { return !cotangent_field.empty(); }
};

/// \brief Every row, in EndpointId order.
const std::array<EndpointInfo, kEndpointCount>& Endpoints();
const EndpointInfo& Endpoint(EndpointId id);
/// \brief The row named `name` ("apply"), if any.
std::optional<EndpointId> FindEndpoint(std::string_view name);
/// \brief Whether a server serves `endpoint`: the component's endpoints
/// where it `implements` them, health always, test in debug mode only.
bool IsServed(const EndpointInfo& endpoint, bool implements, bool debug);

}  // namespace tesscpp::core
