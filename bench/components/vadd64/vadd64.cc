// vadd64: c = a + b in float64 with a VJP and a JVP — the bridge benchmark's
// component (examples/vectoradd mirrors tesseract-core's example, which has no
// VJP, and is float32).
#include <algorithm>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): reads like the other examples

namespace {

Component MakeVadd64() {
  Component c("vadd64", "0.1.0", "c = a + b, float64.\n");
  auto a = c.inputs().Array<double>("a", {kAnyDim}, {.differentiable = true});
  auto b = c.inputs().Array<double>("b", {kAnyDim}, {.differentiable = true});
  c.inputs().Check([=](const ModelView& in) {
    return in[a].size() == in[b].size() ? Status::OK() : Status::InvalidArgument("a and b differ in length");
  });
  auto sum = c.outputs().Array<double>("c", {kAnyDim}, {.differentiable = true});
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    const auto av = in[a].values();
    const auto bv = in[b].values();
    TESS_ASSIGN_OR_RETURN(auto cv, out.NewArray<double>(sum, {in[a].size()}));
    std::transform(av.begin(), av.end(), bv.begin(), cv.begin(), [](double x, double y) { return x + y; });
    return Status::OK();
  });
  // For JAX (tesscpp.jax, tesseract-jax), which traces through it.
  c.AbstractEval([=](const AbstractModelView& in, Record& out) -> Status {
    out.SetShapeDType(sum, in[a]);
    return Status::OK();
  });
  // dc/da = dc/db = I: every requested gradient is the cotangent itself, and
  // the tangent of c is the sum of the given tangents.
  c.VectorJacobianProduct([=](const ModelView&, const PathSet& vjp_inputs, const PathSet&,
                              const TensorMap& cotangent, TensorMap& vjp) {
    for (const std::string& name : vjp_inputs) vjp.insert_or_assign(name, cotangent.at("c"));
    return Status::OK();
  });
  c.JacobianVectorProduct([=](const ModelView& in, const PathSet& jvp_inputs, const PathSet&,
                              const TensorMap& tangent, TensorMap& jvp) -> Status {
    TESS_ASSIGN_OR_RETURN(auto made, NewTensor<double>({in[a].size()}));
    std::fill(made.second.begin(), made.second.end(), 0.0);
    for (const std::string& name : jvp_inputs) {
      const double* t = tangent.at(name).data_as<const double>();
      for (size_t k = 0; k < made.second.size(); ++k) made.second[k] += t[k];
    }
    jvp.insert_or_assign("c", made.first);
    return Status::OK();
  });
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeVadd64)
