#include "tesscpp/finite_differences.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "tesscpp/autodiff/detail/fields.h"
#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/core/path.h"

// tesseract-core 1.15's runtime/experimental/finite_differences.py, in C++:
// the same perturbations (in the input's dtype), the same difference quotients
// and the same SPSA directions for a seed (NumPy's legacy RandomState draws
// MT19937 words and keeps their lowest bit). Differences are formed in double
// precision; tesseract-core forms them in the output's dtype, which for
// float32 outputs differs in the last bits.
namespace tesscpp {
namespace {

using autodiff::internal::ReadValues;
using autodiff::internal::ToTensor;

// The numbers at one path of a model: a float array, or a plain number (a
// 0-d "array").
struct Numbers {
  std::vector<int64_t> dims;
  std::vector<double> values;
  std::optional<Dtype> dtype;  // none: a plain number
  size_t size() const { return values.size(); }
};

// The value at `path` of `root` (a Value or a const Value).
template <typename V>
Result<V*> Locate(V& root, const std::string& path, std::string_view side) {
  TESS_ASSIGN_OR_RETURN(Path parsed, Path::Parse(path));
  V* v = parsed.Find(root);
  if (v == nullptr) return Status::InvalidArgument("finite differences: no ", side, " at '", path, "'");
  return v;
}

Result<Numbers> NumbersAt(const Value& root, const std::string& path, std::string_view side) {
  TESS_ASSIGN_OR_RETURN(const Value* v, Locate(root, path, side));
  if (v->is_number()) return Numbers{{}, {v->as_number()}, std::nullopt};
  if (!v->is_tensor() || !v->as_tensor().device().host_accessible()) {
    return Status::InvalidArgument("finite differences: the ", side, " at '", path,
                                   "' is not a host array or number");
  }
  const Tensor& t = v->as_tensor();
  TESS_ASSIGN_OR_RETURN(std::vector<double> values, ReadValues(t));
  const auto dims = t.shape().dims();
  return Numbers{{dims.begin(), dims.end()}, std::move(values), t.dtype()};
}

using Replacements = std::map<std::string, std::vector<double>>;

// What is differenced: apply's outputs, or (for the HVP) a VJP's answer, at
// one point.
using PointFn = std::function<Result<Value>(const ModelView& point)>;

PointFn Outputs(ApplyFn apply) {
  return [apply = std::move(apply)](const ModelView& point) -> Result<Value> {
    Record out;
    TESS_RETURN_IF_ERROR(apply(point, out));
    return std::move(out).Finish();
  };
}

// One evaluation point: the inputs with some paths' values replaced, and the
// function that evaluates it.
class Evaluator {
 public:
  Evaluator(PointFn fn, const Value& inputs) : fn_(std::move(fn)), inputs_(inputs) {}

  Result<const Numbers*> Input(const std::string& path) {
    auto found = numbers_.find(path);
    if (found == numbers_.end()) {
      TESS_ASSIGN_OR_RETURN(Numbers n, NumbersAt(inputs_, path, "input"));
      found = numbers_.emplace(path, std::move(n)).first;
    }
    return &found->second;
  }

  // The function's value where `replaced` give new values to inputs (rounded
  // to each input's dtype, as tesseract-core's validation rounds them).
  Result<Value> Run(const Replacements& replaced) {
    Value point = inputs_;
    for (const auto& [path, values] : replaced) {
      TESS_ASSIGN_OR_RETURN(const Numbers* original, Input(path));
      TESS_ASSIGN_OR_RETURN(Value * slot, Locate(point, path, "input"));
      if (original->dtype) {
        TESS_ASSIGN_OR_RETURN(Tensor t, ToTensor(values, original->dims, *original->dtype));
        *slot = Value(std::move(t));
      } else {
        *slot = Value(values[0]);
      }
    }
    return fn_(ModelView(point));
  }

 private:
  PointFn fn_;
  const Value& inputs_;
  std::map<std::string, Numbers> numbers_;
};

// tesseract-core's _resolve_eps.
Result<std::map<std::string, double>> StepsFor(const FiniteDifferences& o, const PathSet& paths) {
  std::map<std::string, double> steps;
  if (o.eps_by_path.empty()) {
    for (const auto& p : paths) steps[p] = o.eps;
    return steps;
  }
  auto listed = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
  };
  std::vector<std::string> missing, unknown;
  for (const auto& p : paths) {
    if (!o.eps_by_path.contains(p)) missing.push_back(p);
  }
  for (const auto& [p, step] : o.eps_by_path) {
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) unknown.push_back(p);
  }
  if (!missing.empty()) {
    return Status::InvalidArgument("eps is missing a step size for input path(s): ", listed(missing));
  }
  if (!unknown.empty()) {
    return Status::InvalidArgument("eps names input path(s) that are not being differentiated: ",
                                   listed(unknown));
  }
  return o.eps_by_path;
}

// (a - b) / denominator, element by element, of the outputs at `path`.
Result<std::vector<double>> Quotient(const Value& a, const Value& b, const std::string& path,
                                     double denominator) {
  TESS_ASSIGN_OR_RETURN(Numbers x, NumbersAt(a, path, "output"));
  TESS_ASSIGN_OR_RETURN(Numbers y, NumbersAt(b, path, "output"));
  if (x.size() != y.size())
    return Status::InvalidArgument("finite differences: output '", path, "' changed shape");
  for (size_t i = 0; i < x.size(); ++i) x.values[i] = (x.values[i] - y.values[i]) / denominator;
  return x.values;
}

Result<Tensor> Float64Tensor(std::vector<double> values, std::vector<int64_t> dims) {
  return ToTensor(values, std::move(dims), Dtype::kFloat64);
}

// The derivative of every output in `outs` along one input element (or, for
// SPSA, one direction): calls `row(out, quotient)` per output.
template <typename Row>
Status ForEachQuotient(const Value& plus, const Value& reference, const PathSet& outs, double denominator,
                       const Row& row) {
  for (const auto& out : outs) {
    TESS_ASSIGN_OR_RETURN(std::vector<double> q, Quotient(plus, reference, out, denominator));
    TESS_RETURN_IF_ERROR(row(out, q));
  }
  return Status::OK();
}

// Element by element (central or forward): calls `row(in, k, out, d)` with
// d = ∂out/∂in[k], the elements of `in` in row-major order.
template <typename Row>
Status Elementwise(Evaluator& e, const PathSet& ins, const PathSet& outs,
                   const std::map<std::string, double>& steps, bool central, const Value* base,
                   const Row& row) {
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    const double h = steps.at(in);
    for (size_t k = 0; k < x->size(); ++k) {
      std::vector<double> shifted = x->values;
      shifted[k] += h;
      TESS_ASSIGN_OR_RETURN(Value plus, e.Run({{in, shifted}}));
      Value minus;
      if (central) {
        shifted[k] = x->values[k] - h;
        TESS_ASSIGN_OR_RETURN(minus, e.Run({{in, std::move(shifted)}}));
      }
      TESS_RETURN_IF_ERROR(ForEachQuotient(
          plus, central ? minus : *base, outs, central ? 2 * h : h,
          [&](const std::string& out, const std::vector<double>& d) { return row(in, k, out, d); }));
    }
  }
  return Status::OK();
}

// SPSA's samples, or nullopt where central differences are used instead.
std::optional<int64_t> SpsaSamples(const FiniteDifferences& o, int64_t total_elements) {
  const int64_t samples = o.num_samples.value_or(
      std::max<int64_t>(10, static_cast<int64_t>(std::sqrt(static_cast<double>(total_elements)))));
  if (samples >= total_elements) return std::nullopt;
  return samples;
}

// One SPSA sample: random ±1 directions per input (RandomState.choice([-1, 1])
// draws), and apply at x + h·delta and x - h·delta.
struct SpsaSample {
  std::map<std::string, std::vector<double>> delta;
  Value plus, minus;
};

Result<SpsaSample> DrawSample(Evaluator& e, const PathSet& ins, const std::map<std::string, double>& steps,
                              std::mt19937& rng) {
  SpsaSample s;
  Replacements plus, minus;
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    std::vector<double>& d = s.delta[in];
    d.resize(x->size());
    for (double& v : d) v = (rng() & 1u) != 0 ? 1.0 : -1.0;
    std::vector<double>& p = plus[in];
    std::vector<double>& m = minus[in];
    for (size_t k = 0; k < x->size(); ++k) {
      p.push_back(x->values[k] + steps.at(in) * d[k]);
      m.push_back(x->values[k] - steps.at(in) * d[k]);
    }
  }
  TESS_ASSIGN_OR_RETURN(s.plus, e.Run(plus));
  TESS_ASSIGN_OR_RETURN(s.minus, e.Run(minus));
  return s;
}

std::mt19937 SeededRng(const FiniteDifferences& o) {
  return std::mt19937(o.seed ? *o.seed : std::random_device{}());
}

Result<int64_t> TotalElements(Evaluator& e, const PathSet& ins) {
  int64_t total = 0;
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    total += static_cast<int64_t>(x->size());
  }
  return total;
}

Status FdJacobian(const ApplyFn& apply, const FiniteDifferences& o, const ModelView& inputs,
                  const PathSet& ins, const PathSet& outs, JacobianMap& jac) {
  TESS_ASSIGN_OR_RETURN(auto steps, StepsFor(o, ins));
  Evaluator e(Outputs(apply), inputs.value());
  TESS_ASSIGN_OR_RETURN(Value base, e.Run({}));
  // Blocks of shape (*out_shape, *in_shape), row-major, filled below.
  std::map<std::string, std::map<std::string, std::vector<double>>> blocks;
  std::map<std::string, Numbers> out_numbers;
  for (const auto& out : outs) {
    TESS_ASSIGN_OR_RETURN(out_numbers[out], NumbersAt(base, out, "output"));
    for (const auto& in : ins) {
      TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
      blocks[out][in].assign(out_numbers[out].size() * x->size(), 0.0);
    }
  }
  // An apply whose outputs change shape with the inputs has no Jacobian to
  // fill: refused, as NumPy's broadcasting refuses it in tesseract-core.
  auto same_shape = [&](const std::string& out, const std::vector<double>& d) {
    if (d.size() == out_numbers[out].size()) return Status::OK();
    return Status::InvalidArgument("finite differences: output '", out, "' changed shape");
  };
  auto element = [&](const std::string& in, size_t k, const std::string& out, const std::vector<double>& d) {
    TESS_RETURN_IF_ERROR(same_shape(out, d));
    const size_t n_in = blocks[out][in].size() / std::max<size_t>(1, d.size());
    for (size_t i = 0; i < d.size(); ++i) blocks[out][in][i * n_in + k] = d[i];
    return Status::OK();
  };
  TESS_ASSIGN_OR_RETURN(int64_t total, TotalElements(e, ins));
  const std::optional<int64_t> samples =
      o.algorithm == FdAlgorithm::kStochastic ? SpsaSamples(o, total) : std::nullopt;
  if (!samples) {
    TESS_RETURN_IF_ERROR(
        Elementwise(e, ins, outs, steps, o.algorithm != FdAlgorithm::kForward, &base, element));
  } else {
    std::mt19937 rng = SeededRng(o);
    for (int64_t s = 0; s < *samples; ++s) {
      TESS_ASSIGN_OR_RETURN(SpsaSample sample, DrawSample(e, ins, steps, rng));
      for (const auto& out : outs) {
        for (const auto& in : ins) {
          TESS_ASSIGN_OR_RETURN(std::vector<double> d,
                                Quotient(sample.plus, sample.minus, out, 2 * steps.at(in)));
          TESS_RETURN_IF_ERROR(same_shape(out, d));
          const std::vector<double>& delta = sample.delta.at(in);
          std::vector<double>& block = blocks[out][in];
          for (size_t i = 0; i < d.size(); ++i) {
            for (size_t k = 0; k < delta.size(); ++k) {
              block[i * delta.size() + k] += d[i] / delta[k] / static_cast<double>(*samples);
            }
          }
        }
      }
    }
  }
  for (auto& [out, by_in] : blocks) {
    for (auto& [in, values] : by_in) {
      std::vector<int64_t> dims = out_numbers[out].dims;
      TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
      dims.insert(dims.end(), x->dims.begin(), x->dims.end());
      TESS_ASSIGN_OR_RETURN(Tensor t, Float64Tensor(std::move(values), std::move(dims)));
      jac[out].insert_or_assign(in, std::move(t));
    }
  }
  return Status::OK();
}

// sums[out] += d; the first contribution takes its dims from `at`'s output.
Status AddTo(std::map<std::string, Numbers>& sums, const Value& at, const std::string& out,
             const std::vector<double>& d) {
  auto [it, fresh] = sums.try_emplace(out);
  if (fresh) {
    TESS_ASSIGN_OR_RETURN(it->second, NumbersAt(at, out, "output"));
    it->second.values = d;
    return Status::OK();
  }
  if (d.size() != it->second.size()) {
    return Status::InvalidArgument("finite differences: output '", out, "' changed shape");
  }
  for (size_t i = 0; i < d.size(); ++i) it->second.values[i] += d[i];
  return Status::OK();
}

Status FdJvp(const ApplyFn& apply, const FiniteDifferences& o, const ModelView& inputs, const PathSet& ins,
             const PathSet& outs, const TensorMap& tangent, TensorMap& jvp) {
  TESS_ASSIGN_OR_RETURN(auto steps, StepsFor(o, ins));
  Evaluator e(Outputs(apply), inputs.value());
  const bool central = o.algorithm != FdAlgorithm::kForward;  // stochastic is central for a JVP
  std::optional<Value> base;
  if (!central || ins.empty()) {
    TESS_ASSIGN_OR_RETURN(base, e.Run({}));
  }
  std::map<std::string, Numbers> sums;
  if (ins.empty()) {
    for (const auto& out : outs) {
      TESS_ASSIGN_OR_RETURN(sums[out], NumbersAt(*base, out, "output"));
      std::fill(sums[out].values.begin(), sums[out].values.end(), 0.0);
    }
  }
  // Inputs of one step move together, as tesseract-core groups them.
  std::map<double, PathSet> groups;
  for (const auto& in : ins) groups[steps.at(in)].push_back(in);
  for (const auto& [h, group] : groups) {
    Replacements plus, minus;
    for (const auto& in : group) {
      TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
      auto t = tangent.find(in);
      if (t == tangent.end()) return Status::InvalidArgument("finite differences: no tangent for '", in, "'");
      TESS_ASSIGN_OR_RETURN(std::vector<double> v, ReadValues(t->second));
      if (v.size() != x->size())
        return Status::InvalidArgument("finite differences: tangent '", in, "' has the wrong size");
      for (size_t k = 0; k < v.size(); ++k) {
        plus[in].push_back(x->values[k] + h * v[k]);
        minus[in].push_back(x->values[k] - h * v[k]);
      }
    }
    TESS_ASSIGN_OR_RETURN(Value at_plus, e.Run(plus));
    Value reference;
    if (central) {
      TESS_ASSIGN_OR_RETURN(reference, e.Run(minus));
    }
    TESS_RETURN_IF_ERROR(ForEachQuotient(
        at_plus, central ? reference : *base, outs, central ? 2 * h : h,
        [&](const std::string& out, const std::vector<double>& d) { return AddTo(sums, at_plus, out, d); }));
  }
  for (auto& [out, n] : sums) {
    TESS_ASSIGN_OR_RETURN(Tensor t, Float64Tensor(std::move(n.values), n.dims));
    jvp.insert_or_assign(out, std::move(t));
  }
  return Status::OK();
}

Status FdVjp(const ApplyFn& apply, const FiniteDifferences& o, const ModelView& inputs, const PathSet& ins,
             const PathSet& outs, const TensorMap& cotangent, TensorMap& vjp) {
  TESS_ASSIGN_OR_RETURN(auto steps, StepsFor(o, ins));
  Evaluator e(Outputs(apply), inputs.value());
  std::map<std::string, std::vector<double>> weights;
  for (const auto& out : outs) {
    auto c = cotangent.find(out);
    if (c == cotangent.end())
      return Status::InvalidArgument("finite differences: no cotangent for '", out, "'");
    TESS_ASSIGN_OR_RETURN(weights[out], ReadValues(c->second));
  }
  // Σ over outputs of Σ cotangent · d.
  auto weighted = [&](const std::string& out, const std::vector<double>& d) -> Result<double> {
    const std::vector<double>& w = weights.at(out);
    if (w.size() != d.size() && w.size() != 1) {
      return Status::InvalidArgument("finite differences: cotangent '", out, "' has the wrong size");
    }
    double sum = 0;
    for (size_t i = 0; i < d.size(); ++i) sum += w[w.size() == 1 ? 0 : i] * d[i];
    return sum;
  };
  std::map<std::string, std::vector<double>> result;
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    result[in].assign(x->size(), 0.0);
  }
  TESS_ASSIGN_OR_RETURN(int64_t total, TotalElements(e, ins));
  const std::optional<int64_t> samples =
      o.algorithm == FdAlgorithm::kStochastic ? SpsaSamples(o, total) : std::nullopt;
  if (!samples) {
    std::optional<Value> base;
    if (o.algorithm == FdAlgorithm::kForward) {
      TESS_ASSIGN_OR_RETURN(base, e.Run({}));
    }
    TESS_RETURN_IF_ERROR(Elementwise(
        e, ins, outs, steps, o.algorithm != FdAlgorithm::kForward, base ? &*base : nullptr,
        [&](const std::string& in, size_t k, const std::string& out, const std::vector<double>& d) -> Status {
          TESS_ASSIGN_OR_RETURN(double w, weighted(out, d));
          result[in][k] += w;
          return Status::OK();
        }));
  } else {
    std::mt19937 rng = SeededRng(o);
    for (int64_t s = 0; s < *samples; ++s) {
      TESS_ASSIGN_OR_RETURN(SpsaSample sample, DrawSample(e, ins, steps, rng));
      double delta_sum = 0;  // Σ cotangent · (f(x + h·δ) - f(x - h·δ))
      for (const auto& out : outs) {
        TESS_ASSIGN_OR_RETURN(std::vector<double> d, Quotient(sample.plus, sample.minus, out, 1.0));
        TESS_ASSIGN_OR_RETURN(double w, weighted(out, d));
        delta_sum += w;
      }
      for (const auto& in : ins) {
        const std::vector<double>& delta = sample.delta.at(in);
        for (size_t k = 0; k < delta.size(); ++k) {
          result[in][k] += delta_sum / (2 * steps.at(in)) / delta[k] / static_cast<double>(*samples);
        }
      }
    }
  }
  for (auto& [in, values] : result) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    TESS_ASSIGN_OR_RETURN(Tensor t, Float64Tensor(std::move(values), x->dims));
    vjp.insert_or_assign(in, std::move(t));
  }
  return Status::OK();
}

// The VJP's answer at one point, by path (a flat dict: the answer's keys
// are whole paths, nested ones included).
PointFn GradientOf(const VjpFn& vjp, const PathSet& ins, const PathSet& outs, const TensorMap& cotangent) {
  return [&vjp, &ins, &outs, &cotangent](const ModelView& point) -> Result<Value> {
    // Not from state an apply kept at the unperturbed inputs: a VJP that
    // answers from it (forward reuse) would give both sides the same.
    component::ScopedKept none(nullptr);
    TensorMap at;
    TESS_RETURN_IF_ERROR(vjp(point, ins, outs, cotangent, at));
    Value::Dict answer;
    for (auto& [path, t] : at) answer.set(path, Value(std::move(t)));
    return Value(std::move(answer));
  };
}

Status RequireHost(const TensorMap& vectors, std::string_view what) {
  for (const auto& [path, t] : vectors) {
    if (!t.device().host_accessible()) {
      return Status::InvalidArgument("finite differences: the ", what, " at '", path, "' is on ",
                                     t.device().ToString(), "; the differences read host arrays only");
    }
  }
  return Status::OK();
}

// Central differences of the VJP along the tangent: x ± h v on hvp_inputs,
// h = eps / max|v|, (VJP(x + h v) - VJP(x - h v)) / 2h.
Status FdHvp(const VjpFn& vjp, const HvpFiniteDifferences& o, const ModelView& inputs, const PathSet& ins,
             const PathSet& outs, const TensorMap& tangent, const TensorMap& cotangent, TensorMap& hvp) {
  TESS_RETURN_IF_ERROR(RequireHost(tangent, "tangent"));
  TESS_RETURN_IF_ERROR(RequireHost(cotangent, "cotangent"));
  Evaluator e(GradientOf(vjp, ins, outs, cotangent), inputs.value());
  std::map<std::string, std::vector<double>> along;
  double largest = 0;
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));  // refuses device inputs
    auto t = tangent.find(in);
    if (t == tangent.end()) return Status::InvalidArgument("finite differences: no tangent for '", in, "'");
    TESS_ASSIGN_OR_RETURN(along[in], ReadValues(t->second));
    if (along[in].size() != x->size())
      return Status::InvalidArgument("finite differences: tangent '", in, "' has the wrong size");
    for (double v : along[in]) largest = std::max(largest, std::abs(v));
  }
  const double h = largest > 0 ? o.eps / largest : 0;
  std::optional<Value> at_plus, at_minus;
  if (h > 0) {  // else the derivative along nothing: zeros
    Replacements plus, minus;
    for (const auto& in : ins) {
      TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
      for (size_t k = 0; k < x->size(); ++k) {
        plus[in].push_back(x->values[k] + h * along[in][k]);
        minus[in].push_back(x->values[k] - h * along[in][k]);
      }
    }
    TESS_ASSIGN_OR_RETURN(at_plus, e.Run(plus));
    TESS_ASSIGN_OR_RETURN(at_minus, e.Run(minus));
  }
  for (const auto& in : ins) {
    TESS_ASSIGN_OR_RETURN(const Numbers* x, e.Input(in));
    std::vector<double> d(x->size(), 0.0);
    if (h > 0) {
      const Value* a = at_plus->as_dict().find(in);
      const Value* b = at_minus->as_dict().find(in);
      if (a == nullptr || b == nullptr || !a->is_tensor() || !b->is_tensor())
        return Status::InvalidArgument("finite differences: the VJP gave no '", in, "'");
      TESS_ASSIGN_OR_RETURN(std::vector<double> ga, ReadValues(a->as_tensor()));
      TESS_ASSIGN_OR_RETURN(std::vector<double> gb, ReadValues(b->as_tensor()));
      if (ga.size() != d.size() || gb.size() != d.size())
        return Status::InvalidArgument("finite differences: the VJP's '", in, "' has the wrong size");
      for (size_t k = 0; k < d.size(); ++k) d[k] = (ga[k] - gb[k]) / (2 * h);
    }
    TESS_ASSIGN_OR_RETURN(Tensor t, Float64Tensor(std::move(d), x->dims));
    hvp.insert_or_assign(in, std::move(t));
  }
  return Status::OK();
}

}  // namespace

void DeriveHvpByFiniteDifferences(Component& c, HvpFiniteDifferences options) {
  if (!c.vector_jacobian_product()) {
    std::fprintf(stderr,
                 "tesscpp: DeriveHvpByFiniteDifferences(%s): set or derive vector_jacobian_product first\n",
                 c.name().c_str());
    std::abort();
  }
  if (c.hessian_vector_product()) return;
  const VjpFn vjp = c.vector_jacobian_product().fn;
  std::ostringstream doc;
  doc << "Central finite differences of vector_jacobian_product along the tangent (step " << options.eps
      << " / max|tangent|; tesscpp::DeriveHvpByFiniteDifferences).";
  c.HessianVectorProduct(
      [=](const ModelView& in, const PathSet& ins, const PathSet& outs, const TensorMap& t,
          const TensorMap& ct, TensorMap& hvp) { return FdHvp(vjp, options, in, ins, outs, t, ct, hvp); },
      doc.str());
}

void DeriveByFiniteDifferences(Component& c, FiniteDifferences options) {
  if (!c.apply()) {
    std::fprintf(stderr, "tesscpp: DeriveByFiniteDifferences(%s): set apply first\n", c.name().c_str());
    std::abort();
  }
  const ApplyFn apply = c.apply().fn;
  if (!c.jacobian()) {
    c.Jacobian([=](const ModelView& in, const PathSet& ins, const PathSet& outs, JacobianMap& jac) {
      return FdJacobian(apply, options, in, ins, outs, jac);
    });
  }
  if (!c.jacobian_vector_product()) {
    c.JacobianVectorProduct([=](const ModelView& in, const PathSet& ins, const PathSet& outs,
                                const TensorMap& t,
                                TensorMap& jvp) { return FdJvp(apply, options, in, ins, outs, t, jvp); });
  }
  if (!c.vector_jacobian_product()) {
    c.VectorJacobianProduct([=](const ModelView& in, const PathSet& ins, const PathSet& outs,
                                const TensorMap& ct,
                                TensorMap& vjp) { return FdVjp(apply, options, in, ins, outs, ct, vjp); });
  }
}

}  // namespace tesscpp
