// univariate: the Rosenbrock function (a − x)² + b·(y − x²)² with analytic
// derivatives (test vectors U1-U7 in tests/conformance/test_runtime_sdk.py).
#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

struct Point {
  float x, y, a, b;
  float value() const { return (a - x) * (a - x) + b * (y - x * x) * (y - x * x); }
  // ∂f/∂x and ∂f/∂y, in float32 as the Python original.
  float d(const std::string& name) const {
    return name == "x" ? -2 * (a - x) - 4 * b * x * (y - x * x) : 2 * b * (y - x * x);
  }
};

Value Float32(float v) {
  auto t = *NewTensor<float>({});
  t.second[0] = v;
  return Value(t.first);
}

Component MakeUnivariate() {
  Component c("univariate", "0.1.0", "The Rosenbrock function of two variables.\n");
  auto x = c.inputs().Scalar<float>(
      "x", {.differentiable = true, .doc = "First coordinate.", .default_value = 0.0});
  auto y = c.inputs().Scalar<float>(
      "y", {.differentiable = true, .doc = "Second coordinate.", .default_value = 0.0});
  auto a = c.inputs().Scalar<float>("a", {.doc = "Scale of the first term.", .default_value = 1.0});
  auto b = c.inputs().Scalar<float>("b", {.doc = "Scale of the second term.", .default_value = 100.0});
  auto result = c.outputs().Scalar<float>(
      "result", {.differentiable = true, .doc = "Value of the Rosenbrock function."});

  auto point = [=](const ModelView& in) { return Point{in[x], in[y], in[a], in[b]}; };

  c.Apply(
      [=](const ModelView& in, Record& out) {
        out.Set(result, Float32(point(in).value()));
        return Status::OK();
      },
      "Evaluates the Rosenbrock function at (x, y).");
  c.AbstractEval(
      [=](const AbstractModelView&, Record& out) {
        out.SetShapeDType(result, {{}, Dtype::kFloat32});
        return Status::OK();
      },
      "The result is a float32 scalar whatever the inputs.");
  c.Jacobian(
      [=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs, JacobianMap& jac) {
        const Point p = point(in);
        for (const auto& out : jac_outputs) {
          for (const auto& name : jac_inputs) jac[out].insert_or_assign(name, Float32(p.d(name)).as_tensor());
        }
        return Status::OK();
      });
  c.JacobianVectorProduct([=](const ModelView& in, const PathSet& jvp_inputs, const PathSet& jvp_outputs,
                              const TensorMap& tangent, TensorMap& jvp) {
    const Point p = point(in);
    float value = 0;
    for (const auto& name : jvp_inputs) value += p.d(name) * tangent.at(name).data_as<float>()[0];
    for (const auto& out : jvp_outputs) jvp.insert_or_assign(out, Float32(value).as_tensor());
    return Status::OK();
  });
  c.VectorJacobianProduct([=](const ModelView& in, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                              const TensorMap& cotangent, TensorMap& vjp) {
    const Point p = point(in);
    float weight = 0;
    for (const auto& out : vjp_outputs) weight += cotangent.at(out).data_as<float>()[0];
    for (const auto& name : vjp_inputs) vjp.insert_or_assign(name, Float32(p.d(name) * weight).as_tensor());
    return Status::OK();
  });
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeUnivariate)
