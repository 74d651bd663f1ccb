// scaled_component.cc: apply keeps s; the VJP and JVP use it or solve again.
#include "support/scaled_component.h"

#include <atomic>
#include <memory>

namespace tesscpp::testing {
namespace {
std::atomic<int64_t> solves{0};
}  // namespace

int ScaledSolves() { return static_cast<int>(solves); }

// y = x * s with s = sum(x^2), "solved" (and counted) once per point.
Component MakeScaled() {
  Component c("scaled", "1.0.0");
  auto x = c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  auto y = c.outputs().Array<double>("y", {kAnyDim}, {.differentiable = true});
  auto count = c.outputs().Scalar<int64_t>("solves");
  auto solve = [x](const ModelView& in) {
    ++solves;
    double s = 0;
    for (int64_t i = 0; i < in[x].size(); ++i) s += in[x][i] * in[x][i];
    return s;
  };
  // The kept solve, or a new one.
  auto s_at = [solve](const ModelView& in) {
    const std::shared_ptr<const double> kept = Kept<double>();
    return kept != nullptr ? *kept : solve(in);
  };
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    const double s = solve(in);
    if (KeepRequested()) KeepForDerivatives(std::make_shared<const double>(s), sizeof(double));
    TESS_ASSIGN_OR_RETURN(auto values, out.NewArray<double>(y, {in[x].size()}));
    for (int64_t i = 0; i < in[x].size(); ++i) values[i] = in[x][i] * s;
    out.Set(count, Value(int64_t{solves}));
    return Status::OK();
  });
  // For tesscpp.jax, which traces through it.
  c.AbstractEval([=](const AbstractModelView& in, Record& out) {
    out.SetShapeDType(y, {in[x].shape, Dtype::kFloat64});
    out.SetShapeDType(count, {{}, Dtype::kInt64});
    return Status::OK();
  });
  // d y_i / d x_j = delta_ij s + 2 x_i x_j.
  c.VectorJacobianProduct([=](const ModelView& in, const PathSet&, const PathSet&, const TensorMap& cotangent,
                              TensorMap& vjp) -> Status {
    const double s = s_at(in);
    const int64_t n = in[x].size();
    const double* w = cotangent.at("y").data_as<double>();
    double wx = 0;
    for (int64_t i = 0; i < n; ++i) wx += w[i] * in[x][i];
    TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make({n}));
    TESS_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(Dtype::kFloat64, shape));
    for (int64_t j = 0; j < n; ++j) out.data_as<double>()[j] = w[j] * s + 2 * in[x][j] * wx;
    vjp.insert_or_assign("x", out);
    return Status::OK();
  });
  c.JacobianVectorProduct([=](const ModelView& in, const PathSet&, const PathSet&, const TensorMap& tangent,
                              TensorMap& jvp) -> Status {
    const double s = s_at(in);
    const int64_t n = in[x].size();
    const double* t = tangent.at("x").data_as<double>();
    double xt = 0;
    for (int64_t j = 0; j < n; ++j) xt += in[x][j] * t[j];
    TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make({n}));
    TESS_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(Dtype::kFloat64, shape));
    for (int64_t i = 0; i < n; ++i) out.data_as<double>()[i] = t[i] * s + 2 * in[x][i] * xt;
    jvp.insert_or_assign("y", out);
    return Status::OK();
  });
  return c;
}

}  // namespace tesscpp::testing
