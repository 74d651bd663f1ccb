// vectoradd: s·a + b, optionally normalised.
#include <cmath>

#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeVectorAdd() {
  Component c("vectoradd", "1.2.3", "Simple tesseract that adds two vectors.\n");

  auto a = c.inputs().Array<float>("a", {kAnyDim}, {.differentiable = true, .doc = "An arbitrary vector."});
  auto b = c.inputs().Array<float>(
      "b", {kAnyDim},
      {.differentiable = true, .doc = "An arbitrary vector. Needs to have the same dimensions as a."});
  auto s = c.inputs().Scalar<float>("s", {.differentiable = true, .doc = "A scalar.", .default_value = 1});
  auto normalize = c.inputs().Add(
      "normalize", Bool{},
      {.doc = "True if the output should be normalized, False otherwise.", .default_value = false});
  c.inputs().Check([=](const ModelView& in) {
    if (in[a].shape() == in[b].shape()) return Status::OK();
    return Status::InvalidArgument("a and b must have the same shape. Got ", in[a].shape().ToString(),
                                   " and ", in[b].shape().ToString(), " instead.");
  });

  auto result =
      c.outputs().Array<double>("result", {kAnyDim}, {.differentiable = true, .doc = "Vector s·a + b"});

  c.Apply(
      [=](const ModelView& in, Record& out) -> Status {
        const int64_t n = in[a].size();
        std::vector<float> sum(n);  // computed in float32, as the Python original
        float norm2 = 0;
        for (int64_t i = 0; i < n; ++i) {
          sum[i] = in[a][i] * in[s] + in[b][i];
          norm2 += sum[i] * sum[i];
        }
        const float norm = in[normalize] ? std::sqrt(norm2) : 1.0F;
        TESS_ASSIGN_OR_RETURN(auto values, out.NewArray<double>(result, {n}));
        for (int64_t i = 0; i < n; ++i) values[i] = sum[i] / norm;
        return Status::OK();
      },
      "Multiplies a vector `a` by `s`, and sums the result to `b`.");

  c.Jacobian(
      [=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs,
          JacobianMap& jac) -> Status {
        if (jac_outputs != PathSet{"result"}) {
          return Status::InvalidArgument("only the jacobian of 'result' is available");
        }
        const int64_t n = in[a].size();
        const float sv = in[s];
        // d result/d raw: the identity, or (I - u u^T)/|raw| when normalising.
        std::vector<double> d_raw(n * n, 0.0);
        for (int64_t i = 0; i < n; ++i) d_raw[i * n + i] = 1.0;
        if (in[normalize]) {
          std::vector<float> raw(n);
          double norm = 0;
          for (int64_t i = 0; i < n; ++i) {
            raw[i] = sv * in[a][i] + in[b][i];
            norm += static_cast<double>(raw[i]) * raw[i];
          }
          norm = std::sqrt(norm);
          for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < n; ++j)
              d_raw[i * n + j] = ((i == j) - raw[i] / norm * raw[j] / norm) / norm;
          }
        }
        for (const std::string& name : jac_inputs) {
          if (name == "s") {  // d raw / d s = a
            TESS_ASSIGN_OR_RETURN(auto block, NewTensor<float>({n}));
            for (int64_t i = 0; i < n; ++i) {
              double acc = 0;
              for (int64_t j = 0; j < n; ++j) acc += d_raw[i * n + j] * in[a][j];
              block.second[i] = static_cast<float>(acc);
            }
            jac["result"].insert_or_assign(name, block.first);
          } else {  // d raw / d a = s·I, d raw / d b = I
            const double factor = name == "a" ? sv : 1.0;
            TESS_ASSIGN_OR_RETURN(auto block, NewTensor<double>({n, n}));
            for (int64_t k = 0; k < n * n; ++k) block.second[k] = d_raw[k] * factor;
            jac["result"].insert_or_assign(name, block.first);
          }
        }
        return Status::OK();
      },
      "d result / d (a, b, s), with the normalisation terms when normalize is set.");
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeVectorAdd)
