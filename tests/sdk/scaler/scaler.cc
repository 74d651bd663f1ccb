// scaler: y = k * x, with its VJP; a component that lives outside tesscpp's tree.
#include "tesscpp/component.h"

using namespace tesscpp;

namespace {

Component MakeScaler() {
  Component c("scaler", "0.3.0", "y = k * x.\n");
  auto x = c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  auto k = c.inputs().Scalar<double>("k", {.default_value = 2.0});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    TESS_ASSIGN_OR_RETURN(auto values, out.NewArray<double>(y, {in[x].size()}));
    for (int64_t i = 0; i < in[x].size(); ++i) values[i] = in[k] * in[x][i];
    return Status::OK();
  });
  c.VectorJacobianProduct([=](const ModelView& in, const PathSet&, const PathSet&, const TensorMap& cotangent,
                              TensorMap& vjp) -> Status {
    TESS_ASSIGN_OR_RETURN(Tensor scaled, Tensor::Allocate(Dtype::kFloat64, cotangent.at("y").shape()));
    const double* ct = cotangent.at("y").data_as<double>();
    double* out = scaled.data_as<double>();
    for (int64_t i = 0; i < scaled.num_elements(); ++i) out[i] = in[k] * ct[i];
    vjp.emplace("x", std::move(scaled));
    return Status::OK();
  });
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeScaler)
