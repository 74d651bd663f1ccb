// component.h: a Tesseract written in C++.
//
// A component is a name, a version, input and output models (model.h), and the
// endpoints it implements: apply always, abstract_eval and the derivative
// endpoints (jacobian, JVP, VJP, and tesscpp's Hessian-vector product) when
// the author provides or derives them (autodiff.h, finite_differences.h). The runtime validates requests
// against the models before calling an endpoint and validates what the
// endpoint returns, so endpoint bodies only compute:
//
//   tesscpp::Component MakeComponent() {
//     tesscpp::Component c("vectoradd", "1.2.3", "Simple tesseract that adds two vectors.\n");
//     auto a = c.inputs().Array<float>("a", {tesscpp::kAnyDim}, {.differentiable = true});
//     auto result = c.outputs().Array<double>("result", {tesscpp::kAnyDim});
//     c.Apply([=](const tesscpp::ModelView& in, tesscpp::Record& out) -> tesscpp::Status { ... });
//     return c;
//   }
//   TESSCPP_COMPONENT(MakeComponent)
//
// TESSCPP_COMPONENT exports the library's entry point (component_abi.h), which
// is how `tesscpp serve lib<name>.so` and the Python package load it.
// Endpoints may also throw: the runtime turns exceptions into HTTP 500s.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tesscpp/component_abi.h"
#include "tesscpp/forward_reuse.h"
#include "tesscpp/model.h"
#include "tesscpp/result.h"
#include "tesscpp/run_log.h"

namespace tesscpp {

using ApplyFn = std::function<Status(const ModelView& inputs, Record& outputs)>;
using AbstractEvalFn = std::function<Status(const AbstractModelView& inputs, Record& outputs)>;
using JacobianFn = std::function<Status(const ModelView& inputs, const PathSet& jac_inputs,
                                        const PathSet& jac_outputs, JacobianMap& jacobian)>;
using JvpFn =
    std::function<Status(const ModelView& inputs, const PathSet& jvp_inputs, const PathSet& jvp_outputs,
                         const TensorMap& tangent_vector, TensorMap& jvp)>;
using VjpFn =
    std::function<Status(const ModelView& inputs, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                         const TensorMap& cotangent_vector, TensorMap& vjp)>;
/// \brief The derivative along `tangent_vector` (keyed by hvp_inputs) of the
/// VJP of `cotangent_vector` (keyed by hvp_outputs) with respect to
/// hvp_inputs, other inputs held fixed; answered keyed by hvp_inputs
/// (docs/derivatives.md).
using HvpFn =
    std::function<Status(const ModelView& inputs, const PathSet& hvp_inputs, const PathSet& hvp_outputs,
                         const TensorMap& tangent_vector, const TensorMap& cotangent_vector, TensorMap& hvp)>;

/// \brief An endpoint function with the docstring the OpenAPI document shows.
template <typename Fn>
struct Endpoint {
  Fn fn;
  std::string doc;
  explicit operator bool() const { return static_cast<bool>(fn); }
};

class Component {
 public:
  /// \param name shown as the OpenAPI title (TESSERACT_NAME overrides it, as
  /// tesseract-core's runtime reads it from there)
  Component(std::string name, std::string version, std::string description = "");

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }

  /// \brief The input model under construction ("InputSchema").
  ModelBuilder& inputs() { return inputs_; }
  /// \brief The output model under construction ("OutputSchema").
  ModelBuilder& outputs() { return outputs_; }

  Component& Apply(ApplyFn fn, std::string doc = "");
  Component& AbstractEval(AbstractEvalFn fn, std::string doc = "");
  Component& Jacobian(JacobianFn fn, std::string doc = "");
  Component& JacobianVectorProduct(JvpFn fn, std::string doc = "");
  Component& VectorJacobianProduct(VjpFn fn, std::string doc = "");
  Component& HessianVectorProduct(HvpFn fn, std::string doc = "");
  /// \brief Declares that the endpoints handle CUDA tensors (reading them with
  /// CUDA code, or checking Tensor::device()). Without it, CUDA inputs that
  /// arrive by a GPU transport are copied to the host before the call.
  /// Device inputs are ready for work on the legacy default stream (and on
  /// the per-thread default and every blocking stream, which wait for it);
  /// work on a non-blocking stream must first wait for the legacy stream.
  /// Inputs are borrowed: copy any you keep past the call.
  Component& AcceptDeviceArrays(bool accept = true) {
    accepts_device_arrays_ = accept;
    return *this;
  }

  /// \name What the runtime reads once the component is built.
  /// @{
  std::shared_ptr<const ModelSchema> input_schema() const { return inputs_.Build(); }
  std::shared_ptr<const ModelSchema> output_schema() const { return outputs_.Build(); }
  const Endpoint<ApplyFn>& apply() const { return apply_; }
  const Endpoint<AbstractEvalFn>& abstract_eval() const { return abstract_eval_; }
  const Endpoint<JacobianFn>& jacobian() const { return jacobian_; }
  const Endpoint<JvpFn>& jacobian_vector_product() const { return jvp_; }
  const Endpoint<VjpFn>& vector_jacobian_product() const { return vjp_; }
  const Endpoint<HvpFn>& hessian_vector_product() const { return hvp_; }
  bool accepts_device_arrays() const { return accepts_device_arrays_; }
  /// @}

 private:
  std::string name_;
  std::string version_;
  std::string description_;
  ModelBuilder inputs_{"InputSchema"};
  ModelBuilder outputs_{"OutputSchema"};
  Endpoint<ApplyFn> apply_;
  Endpoint<AbstractEvalFn> abstract_eval_;
  Endpoint<JacobianFn> jacobian_;
  Endpoint<JvpFn> jvp_;
  Endpoint<VjpFn> vjp_;
  Endpoint<HvpFn> hvp_;
  bool accepts_device_arrays_ = false;
};

}  // namespace tesscpp

/// \brief Exports `factory` (a function returning tesscpp::Component) as this
/// shared library's component entry point. Use once per library.
#define TESSCPP_COMPONENT(factory)                                                        \
  extern "C" __attribute__((visibility("default"))) const TesscppComponentEntryV1*        \
  TESSCPP_COMPONENT_ENTRY_SYMBOL(void) {                                                  \
    static const TesscppComponentEntryV1 entry = ::tesscpp::internal::MakeComponentEntry( \
        +[]() { return static_cast<void*>(new ::tesscpp::Component(factory())); });       \
    return &entry;                                                                        \
  }
