// The derivative endpoints against central finite differences of apply
// (docs/check-gradients.md has the algorithm and where it follows
// tesseract-runtime's check-gradients). Everything goes through the public
// client, so the Tesseract may be in-process, ours served or tesseract-core's.
#include "tesscpp/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "schema/array_coercion.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/core/path.h"
#include "tesscpp/schema.h"

namespace tesscpp {
namespace {

const std::string_view kJacobian = core::Endpoint(core::EndpointId::kJacobian).name;
const std::string_view kJvp = core::Endpoint(core::EndpointId::kJacobianVectorProduct).name;
const std::string_view kVjp = core::Endpoint(core::EndpointId::kVectorJacobianProduct).name;
const std::string_view kHvp = core::Endpoint(core::EndpointId::kHessianVectorProduct).name;

const Value* Member(const Value& value, std::string_view key) {
  return value.is_dict() ? value.as_dict().find(key) : nullptr;
}

// A differentiable leaf of the inputs or outputs, at a concrete path.
struct Leaf {
  std::string path;
  Path parsed;
  Tensor tensor;
  int64_t size() const { return tensor.num_elements(); }
};

struct Pattern {
  Path path;
  std::optional<Dtype> dtype;
};

// The differentiable_arrays of one schema of the OpenAPI document.
Result<std::vector<Pattern>> PatternsOf(const Value& openapi, std::string_view schema) {
  const Value* components = Member(openapi, "components");
  const Value* schemas = components != nullptr ? Member(*components, "schemas") : nullptr;
  const Value* model = schemas != nullptr ? Member(*schemas, schema) : nullptr;
  const Value* arrays = model != nullptr ? Member(*model, "differentiable_arrays") : nullptr;
  std::vector<Pattern> patterns;
  if (arrays == nullptr || !arrays->is_dict()) return patterns;
  for (const auto& [text, spec] : arrays->as_dict()) {
    TESS_ASSIGN_OR_RETURN(Path path, Path::Parse(text));
    std::optional<Dtype> dtype;
    if (const Value* name = Member(spec, "dtype"); name != nullptr && name->is_string()) {
      auto parsed = DtypeFromName(name->as_string());
      if (parsed.ok()) dtype = *parsed;
    }
    patterns.push_back({std::move(path), dtype});
  }
  return patterns;
}

// The concrete paths `pattern` names in `tree`, with their values: `[]` and
// `{}` expand over what is there; a missing field or a container of the wrong
// kind gives nothing (an omitted optional input, say).
void Expand(const Value& node, const std::vector<PathSegment>& pattern, size_t at, const Path& here,
            std::vector<std::pair<Path, const Value*>>& found) {
  if (at == pattern.size()) {
    found.emplace_back(here, &node);
    return;
  }
  const PathSegment& segment = pattern[at];
  switch (segment.kind) {
    case PathSegment::Kind::kField:
    case PathSegment::Kind::kKey:
      if (const Value* child = Member(node, segment.name); child != nullptr) {
        Expand(*child, pattern, at + 1, here.Child(segment), found);
      }
      return;
    case PathSegment::Kind::kAnyKey:
      if (!node.is_dict()) return;
      for (const auto& [key, child] : node.as_dict()) {
        Expand(child, pattern, at + 1, here.Child(PathSegment::Key(key)), found);
      }
      return;
    case PathSegment::Kind::kIndex:
      if (node.is_list() && segment.index >= 0 &&
          segment.index < static_cast<int64_t>(node.as_list().size())) {
        Expand(node.as_list()[static_cast<size_t>(segment.index)], pattern, at + 1, here.Child(segment),
               found);
      }
      return;
    case PathSegment::Kind::kAnyIndex:
      if (!node.is_list()) return;
      for (size_t i = 0; i < node.as_list().size(); ++i) {
        Expand(node.as_list()[i], pattern, at + 1, here.Child(PathSegment::Index(static_cast<int64_t>(i))),
               found);
      }
      return;
  }
}

// The node at a concrete path, or nullptr (const or not).
template <typename V>
V* Walk(V& root, const Path& path) {
  V* node = &root;
  for (const PathSegment& segment : path.segments()) {
    if (segment.kind == PathSegment::Kind::kIndex) {
      if (!node->is_list() || segment.index >= static_cast<int64_t>(node->as_list().size())) return nullptr;
      node = &node->as_list()[static_cast<size_t>(segment.index)];
    } else {
      if (!node->is_dict()) return nullptr;
      node = node->as_dict().find(segment.name);
      if (node == nullptr) return nullptr;
    }
  }
  return node;
}

// A value of an answer as a float tensor (numbers and lists, as
// tesseract-core's in-process results may be, become float64 arrays).
Result<Tensor> AsTensor(const Value& value, std::string_view context) {
  if (value.is_tensor()) return value.as_tensor();
  auto coerced =
      schema::CoerceArray(SchemaType::Array(ShapeSpec::AnyRank(), Dtype::kFloat64), value, nullptr);
  if (!coerced.ok()) return coerced.status().WithContext(context);
  return coerced->as_tensor();
}

// The array leaves `patterns` find in `tree`: numbers and nested lists become
// arrays of the declared dtype (float64 where none is declared), as the
// server would validate them; null, strings and other non-arrays are skipped.
Result<std::vector<Leaf>> Leaves(const Value& tree, const std::vector<Pattern>& patterns) {
  std::vector<Leaf> leaves;
  for (const Pattern& pattern : patterns) {
    std::vector<std::pair<Path, const Value*>> found;
    Expand(tree, pattern.path.segments(), 0, Path(), found);
    for (const auto& [path, value] : found) {
      if (!value->is_tensor() && !value->is_number() && !value->is_list()) continue;
      const std::string name = path.ToString();
      const Dtype dtype =
          pattern.dtype.value_or(value->is_tensor() ? value->as_tensor().dtype() : Dtype::kFloat64);
      auto coerced = schema::CoerceArray(SchemaType::Array(ShapeSpec::AnyRank(), dtype), *value, nullptr);
      if (!coerced.ok()) return coerced.status().WithContext(name);
      leaves.push_back({name, path, coerced->as_tensor()});
    }
  }
  return leaves;
}

bool Floating(const Leaf& leaf) {
  return leaf.tensor.dtype() == Dtype::kFloat32 || leaf.tensor.dtype() == Dtype::kFloat64;
}

// Only float arrays can be stepped and compared.
Status RequireFloating(const std::vector<Leaf>& leaves) {
  for (const Leaf& leaf : leaves) {
    if (!Floating(leaf)) {
      return Status::InvalidArgument(leaf.path, ": finite differences need a float32 or float64 array, not ",
                                     DtypeName(leaf.tensor.dtype()));
    }
  }
  return Status::OK();
}

// Keeps the leaves `wanted` names (all when empty); an unknown name is an error
// listing what there is.
Result<std::vector<Leaf>> Select(std::vector<Leaf> leaves, const std::vector<std::string>& wanted,
                                 std::string_view what) {
  if (wanted.empty()) return leaves;
  std::vector<Leaf> selected;
  for (const std::string& name : wanted) {
    auto it = std::find_if(leaves.begin(), leaves.end(), [&](const Leaf& l) { return l.path == name; });
    if (it == leaves.end()) {
      std::string known;
      for (const Leaf& l : leaves) known += (known.empty() ? "" : ", ") + l.path;
      return Status::InvalidArgument(what, " path ", name, " is not among the differentiable ", what,
                                     "s of this payload (", known, ")");
    }
    selected.push_back(*it);
  }
  return selected;
}

double ElementOf(const Tensor& t, int64_t i) { return schema::ElementAt(t, i).real(); }

// A copy of `t` whose element `i` is `value` (in t's dtype, as numpy's
// in-place add on a float32 array rounds the step to float32).
Result<Tensor> WithElement(const Tensor& t, int64_t i, double delta) {
  TESS_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(t.dtype(), t.shape()));
  if (t.nbytes() > 0) std::memcpy(copy.data(), t.data(), static_cast<size_t>(t.nbytes()));
  if (t.dtype() == Dtype::kFloat32) {
    float* v = copy.data_as<float>() + i;
    *v = *v + static_cast<float>(delta);
  } else {
    double* v = copy.data_as<double>() + i;
    *v = *v + delta;
  }
  return copy;
}

// One-hot tensor shaped and typed like `like`.
Result<Tensor> OneHot(const Tensor& like, int64_t i) {
  TESS_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(like.dtype(), like.shape()));
  if (t.nbytes() > 0) std::memset(t.data(), 0, static_cast<size_t>(t.nbytes()));
  if (t.dtype() == Dtype::kFloat32) {
    t.data_as<float>()[i] = 1.0F;
  } else {
    t.data_as<double>()[i] = 1.0;
  }
  return t;
}

// The array at key `name` of an endpoint's answer (keyed by wire names).
Result<Tensor> TensorIn(const Value& answer, const std::string& name, std::string_view endpoint) {
  const Value* value = Member(answer, name);
  if (value == nullptr) return Status::Internal(endpoint, " returned no '", name, "'");
  return AsTensor(*value, std::string(endpoint) + " " + name);
}

std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int64_t dim = shape.dims()[static_cast<size_t>(d)];
    index[static_cast<size_t>(d)] = flat % dim;
    flat /= dim;
  }
  return index;
}

bool Close(const std::vector<double>& fd, const std::vector<double>& grad, double rtol, double atol) {
  if (fd.size() != grad.size()) return false;
  for (size_t i = 0; i < fd.size(); ++i) {
    if (!(std::fabs(fd[i] - grad[i]) <= atol + rtol * std::fabs(grad[i]))) return false;  // NaN fails
  }
  return true;
}

class Checker {
 public:
  Checker(const Tesseract& t, Value inputs, std::vector<Leaf> ins, std::vector<Leaf> outs,
          const GradientCheckOptions& options)
      : t_(t), inputs_(std::move(inputs)), ins_(std::move(ins)), outs_(std::move(outs)), options_(options) {
    std::random_device device;
    rng_.seed(options.seed.value_or((static_cast<uint64_t>(device()) << 32U) ^ device()));
  }

  Result<EndpointCheck> Run(std::string_view endpoint, const GradientCheckProgress& progress) {
    EndpointCheck result{std::string(endpoint), 0, {}};
    // Sampled input elements: a share of max_evals by size, at least one each.
    int64_t total = 0;
    for (const Leaf& in : ins_) total += in.tensor.rank() == 0 ? 1 : in.size();  // an empty array has none
    std::vector<std::tuple<const Leaf*, const Leaf*, int64_t>> checks;
    for (const Leaf& in : ins_) {
      std::vector<int64_t> indices;
      if (in.tensor.rank() == 0) {
        indices = {0};
      } else if (in.size() > 0) {
        const int64_t n = std::max<int64_t>(1, options_.max_evals * in.size() / std::max<int64_t>(total, 1));
        std::uniform_int_distribution<int64_t> pick(0, in.size() - 1);
        for (int64_t k = 0; k < n; ++k) indices.push_back(pick(rng_));
      }
      for (int64_t i : indices) {
        for (const Leaf& out : outs_) checks.emplace_back(&in, &out, i);
      }
    }
    result.checks = static_cast<int64_t>(checks.size());
    for (size_t k = 0; k < checks.size(); ++k) {
      if (progress) progress(result.endpoint, static_cast<int64_t>(k), result.checks);
      const auto& [in, out, index] = checks[k];
      GradientCheckFailure record{
          in->path,
          out->path,
          in->tensor.rank() == 0 ? std::vector<int64_t>{} : Unravel(index, in->tensor.shape()),
          {},
          {},
          {},
          {}};
      Status checked = Check(endpoint, *in, *out, index, record);
      if (!checked.ok()) {
        record.error = checked.message();
        result.failures.push_back(std::move(record));
      } else if (!Close(record.finite_difference, record.endpoint, options_.rtol, options_.atol)) {
        result.failures.push_back(std::move(record));
      }
    }
    if (progress) progress(result.endpoint, result.checks, result.checks);
    return result;
  }

 private:
  double Step(const Leaf& in) const {
    auto it = options_.eps_for.find(in.path);
    return it != options_.eps_for.end() ? it->second : options_.eps;
  }

  // The inputs with element `index` of `in` moved by `delta`.
  Result<Value> Perturbed(const Leaf& in, int64_t index, double delta) const {
    TESS_ASSIGN_OR_RETURN(Tensor moved, WithElement(in.tensor, index, delta));
    Value perturbed = inputs_;
    Value* slot = Walk(perturbed, in.parsed);
    if (slot == nullptr) return Status::Internal("input ", in.path, " is gone from the inputs");
    *slot = Value(std::move(moved));
    return perturbed;
  }

  // d(out)/d(in[index]) by central differences, over out's elements; kept per
  // (in, out, index) for the whole run, since endpoints share the samples.
  Result<std::vector<double>> FiniteDifference(const Leaf& in, const Leaf& out, int64_t index) {
    const auto key = std::make_tuple(in.path, out.path, index);
    if (auto it = fd_.find(key); it != fd_.end()) return it->second;
    const double h = Step(in);
    std::vector<Tensor> sides;
    for (double delta : {h, -h}) {
      TESS_ASSIGN_OR_RETURN(Value perturbed, Perturbed(in, index, delta));
      TESS_ASSIGN_OR_RETURN(Value answer, t_.Apply(perturbed));
      const Value* value = Walk(std::as_const(answer), out.parsed);
      if (value == nullptr) return Status::Internal("apply's answer has no ", out.path);
      TESS_ASSIGN_OR_RETURN(Tensor side, AsTensor(*value, "apply " + out.path));
      if (side.num_elements() != out.size()) {
        return Status::Internal("apply's ", out.path, " changed size under a step of ", h);
      }
      sides.push_back(std::move(side));
    }
    // In the output's dtype, as tesseract-runtime's numpy arithmetic does.
    const bool single = out.tensor.dtype() == Dtype::kFloat32;
    std::vector<double> fd(static_cast<size_t>(out.size()));
    for (int64_t i = 0; i < out.size(); ++i) {
      const double diff = ElementOf(sides[0], i) - ElementOf(sides[1], i);
      fd[static_cast<size_t>(i)] =
          single ? static_cast<double>(static_cast<float>(diff) / static_cast<float>(2 * h)) : diff / (2 * h);
    }
    fd_.emplace(key, fd);
    return fd;
  }

  Status Check(std::string_view endpoint, const Leaf& in, const Leaf& out, int64_t index,
               GradientCheckFailure& record) {
    if (endpoint == kHvp) return CheckHvp(in, out, index, record);
    TESS_ASSIGN_OR_RETURN(record.finite_difference, FiniteDifference(in, out, index));
    const std::vector<std::string> in_paths{in.path};
    const std::vector<std::string> out_paths{out.path};
    if (endpoint == kJacobian) {
      TESS_ASSIGN_OR_RETURN(Value answer, t_.Jacobian(inputs_, in_paths, out_paths));
      const Value* rows = Member(answer, out.path);
      if (rows == nullptr) return Status::Internal("jacobian returned no '", out.path, "'");
      TESS_ASSIGN_OR_RETURN(Tensor j, TensorIn(*rows, in.path, "jacobian"));
      if (j.num_elements() != out.size() * in.size()) {
        return Status::Internal("jacobian[", out.path, "][", in.path, "] has ", j.num_elements(),
                                " elements, expected ", out.size() * in.size());
      }
      for (int64_t o = 0; o < out.size(); ++o) record.endpoint.push_back(ElementOf(j, o * in.size() + index));
      return Status::OK();
    }
    if (endpoint == kJvp) {
      TESS_ASSIGN_OR_RETURN(Tensor tangent, OneHot(in.tensor, index));
      Value::Dict tangents;
      tangents.set(in.path, Value(std::move(tangent)));
      TESS_ASSIGN_OR_RETURN(Value answer,
                            t_.JacobianVectorProduct(inputs_, in_paths, out_paths, Value(tangents)));
      TESS_ASSIGN_OR_RETURN(Tensor jvp, TensorIn(answer, out.path, endpoint));
      if (jvp.num_elements() != out.size())
        return Status::Internal("jvp's ", out.path, " has the wrong size");
      for (int64_t o = 0; o < out.size(); ++o) record.endpoint.push_back(ElementOf(jvp, o));
      return Status::OK();
    }
    // VJP: one-hot cotangents over the output's elements (or a sample of
    // them, drawn once per pair), each giving one element of the row.
    TESS_ASSIGN_OR_RETURN(const std::vector<int64_t>* columns, VjpColumns(in, out));
    record.compared = *columns;
    if (columns->size() == static_cast<size_t>(out.size())) record.compared.clear();
    std::vector<double> fd;
    for (int64_t c : *columns) {
      TESS_ASSIGN_OR_RETURN(double g, VjpElement(in, out, c, index));
      record.endpoint.push_back(g);
      fd.push_back(record.finite_difference[static_cast<size_t>(c)]);
    }
    record.finite_difference = std::move(fd);
    return Status::OK();
  }

  // The HVP along input element `index` for a random cotangent on `out`,
  // against central differences of the VJP of that cotangent along the same
  // element, over the input's elements: d/dx_index of (u . out)'s gradient.
  Status CheckHvp(const Leaf& in, const Leaf& out, int64_t index, GradientCheckFailure& record) {
    TESS_ASSIGN_OR_RETURN(const Value* cotangents, CotangentOn(out));
    const double h = Step(in);
    std::vector<Tensor> sides;
    for (double delta : {h, -h}) {
      TESS_ASSIGN_OR_RETURN(Value perturbed, Perturbed(in, index, delta));
      TESS_ASSIGN_OR_RETURN(Value answer,
                            t_.VectorJacobianProduct(perturbed, {in.path}, {out.path}, *cotangents));
      TESS_ASSIGN_OR_RETURN(Tensor g, TensorIn(answer, in.path, kVjp));
      if (g.num_elements() != in.size()) return Status::Internal("vjp's ", in.path, " has the wrong size");
      sides.push_back(std::move(g));
    }
    TESS_ASSIGN_OR_RETURN(Tensor tangent, OneHot(in.tensor, index));
    Value::Dict tangents;
    tangents.set(in.path, Value(std::move(tangent)));
    TESS_ASSIGN_OR_RETURN(
        Value answer, t_.HessianVectorProduct(inputs_, {in.path}, {out.path}, Value(tangents), *cotangents));
    TESS_ASSIGN_OR_RETURN(Tensor hvp, TensorIn(answer, in.path, kHvp));
    if (hvp.num_elements() != in.size()) return Status::Internal("hvp's ", in.path, " has the wrong size");
    for (int64_t i = 0; i < in.size(); ++i) {
      record.finite_difference.push_back((ElementOf(sides[0], i) - ElementOf(sides[1], i)) / (2 * h));
      record.endpoint.push_back(ElementOf(hvp, i));
    }
    return Status::OK();
  }

  // A cotangent on `out` drawn once (standard normal, in the output's dtype).
  Result<const Value*> CotangentOn(const Leaf& out) {
    auto it = cotangents_.find(out.path);
    if (it == cotangents_.end()) {
      TESS_ASSIGN_OR_RETURN(Tensor u, Tensor::Allocate(out.tensor.dtype(), out.tensor.shape()));
      std::normal_distribution<double> normal;
      for (int64_t i = 0; i < out.size(); ++i) {
        if (u.dtype() == Dtype::kFloat32) {
          u.data_as<float>()[i] = static_cast<float>(normal(rng_));
        } else {
          u.data_as<double>()[i] = normal(rng_);
        }
      }
      Value::Dict dict;
      dict.set(out.path, Value(std::move(u)));
      it = cotangents_.emplace(out.path, Value(std::move(dict))).first;
    }
    return &it->second;
  }

  Result<const std::vector<int64_t>*> VjpColumns(const Leaf& in, const Leaf& out) {
    const auto key = std::make_pair(in.path, out.path);
    auto it = columns_.find(key);
    if (it == columns_.end()) {
      std::vector<int64_t> all(static_cast<size_t>(out.size()));
      std::iota(all.begin(), all.end(), 0);
      if (options_.max_output_samples && *options_.max_output_samples < out.size()) {
        std::shuffle(all.begin(), all.end(), rng_);
        all.resize(static_cast<size_t>(*options_.max_output_samples));
        std::sort(all.begin(), all.end());
      }
      it = columns_.emplace(key, std::move(all)).first;
    }
    return &it->second;
  }

  // Element `index` of the VJP for a one-hot cotangent at output element `c`;
  // one call per (in, out, c) serves every sampled index.
  Result<double> VjpElement(const Leaf& in, const Leaf& out, int64_t c, int64_t index) {
    const auto key = std::make_tuple(in.path, out.path, c);
    auto it = vjp_.find(key);
    if (it == vjp_.end()) {
      TESS_ASSIGN_OR_RETURN(Tensor cotangent, OneHot(out.tensor, c));
      Value::Dict cotangents;
      cotangents.set(out.path, Value(std::move(cotangent)));
      TESS_ASSIGN_OR_RETURN(Value answer,
                            t_.VectorJacobianProduct(inputs_, {in.path}, {out.path}, Value(cotangents)));
      TESS_ASSIGN_OR_RETURN(Tensor g, TensorIn(answer, in.path, kVjp));
      if (g.num_elements() != in.size()) return Status::Internal("vjp's ", in.path, " has the wrong size");
      it = vjp_.emplace(key, std::move(g)).first;
    }
    return ElementOf(it->second, index);
  }

  const Tesseract& t_;
  Value inputs_;
  std::vector<Leaf> ins_;
  std::vector<Leaf> outs_;
  const GradientCheckOptions& options_;
  std::mt19937_64 rng_;
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<double>> fd_;
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> columns_;
  std::map<std::tuple<std::string, std::string, int64_t>, Tensor> vjp_;
  std::map<std::string, Value> cotangents_;  // HVP checks' cotangents, by output
};

}  // namespace

Result<std::vector<EndpointCheck>> CheckGradients(const Tesseract& tesseract, const Value& payload,
                                                  const GradientCheckOptions& options,
                                                  const GradientCheckProgress& progress) {
  const Value* given = Member(payload, "inputs");
  if (given == nullptr || !given->is_dict()) {
    return Status::InvalidArgument("payload: expected {\"inputs\": {...}}, the body of an apply request");
  }
  if (options.eps <= 0) return Status::InvalidArgument("eps must be positive, not ", options.eps);
  if (options.max_evals < 1) return Status::InvalidArgument("max_evals must be at least 1");
  if (options.max_output_samples && *options.max_output_samples < 1) {
    return Status::InvalidArgument("max_output_samples must be at least 1");
  }

  TESS_ASSIGN_OR_RETURN(std::vector<std::string> available, tesseract.AvailableEndpoints());
  std::vector<std::string> endpoints;
  for (std::string_view e : {kJacobian, kJvp, kVjp, kHvp}) {
    const bool has = std::find(available.begin(), available.end(), e) != available.end();
    const bool asked =
        options.endpoints.empty() ||
        std::find(options.endpoints.begin(), options.endpoints.end(), e) != options.endpoints.end();
    if (has && asked) endpoints.emplace_back(e);
  }
  for (const std::string& e : options.endpoints) {
    if (e != kJacobian && e != kJvp && e != kVjp && e != kHvp) {
      return Status::InvalidArgument("endpoint ", e, " is not a derivative endpoint (", kJacobian, ", ", kJvp,
                                     ", ", kVjp, ", ", kHvp, ")");
    }
    if (std::find(available.begin(), available.end(), e) == available.end()) {
      return Status::InvalidArgument("endpoint ", e, " is not offered by this Tesseract");
    }
  }
  if (endpoints.empty()) return Status::InvalidArgument("this Tesseract has no derivative endpoint to check");

  TESS_ASSIGN_OR_RETURN(Value openapi, tesseract.OpenApiSchema());
  TESS_ASSIGN_OR_RETURN(std::vector<Pattern> in_patterns, PatternsOf(openapi, "ApplyInputSchema"));
  TESS_ASSIGN_OR_RETURN(std::vector<Pattern> out_patterns, PatternsOf(openapi, "ApplyOutputSchema"));
  TESS_ASSIGN_OR_RETURN(std::vector<Leaf> ins, Leaves(*given, in_patterns));
  TESS_ASSIGN_OR_RETURN(ins, Select(std::move(ins), options.input_paths, "input"));
  TESS_RETURN_IF_ERROR(RequireFloating(ins));
  for (const auto& step : options.eps_for) {
    const std::string& path =
        step.first;  // not a structured binding: lambdas cannot capture those in clang 14
    if (std::none_of(ins.begin(), ins.end(), [&](const Leaf& l) { return l.path == path; })) {
      return Status::InvalidArgument("eps_for names input path ", path, ", which is not being checked");
    }
    if (step.second <= 0) return Status::InvalidArgument("eps_for ", path, " must be positive");
  }
  // The inputs as sent from now on: each checked leaf as the array it was read as.
  Value inputs = *given;
  for (const Leaf& in : ins) {
    Value* slot = Walk(inputs, in.parsed);
    // A pattern that is an ancestor of another (`xs` and `xs.[]`) would have
    // replaced this leaf's container already.
    if (slot == nullptr)
      return Status::InvalidArgument("differentiable input ", in.path, " lies inside another one");
    *slot = Value(in.tensor);
  }
  auto outputs = tesseract.Apply(inputs);
  if (!outputs.ok()) return outputs.status().WithContext("apply at the payload");
  TESS_ASSIGN_OR_RETURN(std::vector<Leaf> outs, Leaves(*outputs, out_patterns));
  if (options.output_paths.empty()) {
    std::erase_if(outs, [](const Leaf& l) { return !Floating(l); });  // nothing to compare in them
  } else {
    TESS_ASSIGN_OR_RETURN(outs, Select(std::move(outs), options.output_paths, "output"));
    TESS_RETURN_IF_ERROR(RequireFloating(outs));
  }

  Checker checker(tesseract, std::move(inputs), std::move(ins), std::move(outs), options);
  std::vector<EndpointCheck> results;
  for (const std::string& endpoint : endpoints) {
    TESS_ASSIGN_OR_RETURN(EndpointCheck result, checker.Run(endpoint, progress));
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace tesscpp
