// vectoradd written as callbacks (callback_component.h), without Component,
// ModelSchema or the derived models: the component kind does all of its own
// validation, as a Python module does with pydantic.
#include "support/callback_component.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tesscpp/internal/runtime/failure_details.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::runtime {
namespace {

using core::EndpointId;

struct VectoraddInputs {
  Tensor a;
  Tensor b;
  double s = 1.0;
};

Status Invalid(std::vector<Value> loc, std::string type, std::string msg, Value input) {
  return ValidationFailure(
      {ValidationIssue{std::move(type), std::move(loc), std::move(msg), std::move(input), Value()}});
}

Result<Tensor> Vector(const Value::Dict& inputs, const char* name) {
  const Value* v = inputs.find(name);
  if (v == nullptr)
    return Invalid({Value("inputs"), Value(name)}, "missing", "Field required", Value(inputs));
  if (!v->is_tensor() || v->as_tensor().rank() != 1 || v->as_tensor().dtype() != Dtype::kFloat32) {
    return Invalid({Value("inputs"), Value(name)}, "array_type", "Input should be a float32 vector", *v);
  }
  return v->as_tensor();
}

Result<VectoraddInputs> ReadInputs(const Value& body) {
  const Value::Dict* dict = body.is_dict() ? &body.as_dict() : nullptr;
  const Value* inputs = dict != nullptr ? dict->find("inputs") : nullptr;
  if (inputs == nullptr || !inputs->is_dict()) {
    return Invalid({Value("inputs")}, "model_type", "Input should be a valid dictionary", body);
  }
  const Value::Dict& in = inputs->as_dict();
  TESS_ASSIGN_OR_RETURN(Tensor a, Vector(in, "a"));
  TESS_ASSIGN_OR_RETURN(Tensor b, Vector(in, "b"));
  VectoraddInputs out{std::move(a), std::move(b)};
  if (const Value* s = in.find("s")) {
    if (!s->is_number())
      return Invalid({Value("inputs"), Value("s")}, "float_type", "Input should be a number", *s);
    out.s = s->as_number();
  }
  if (const Value* normalize = in.find("normalize")) {
    if (!normalize->is_bool()) {
      return Invalid({Value("inputs"), Value("normalize")}, "bool_type", "Input should be a valid boolean",
                     *normalize);
    }
    if (normalize->as_bool()) {
      return Invalid({Value("inputs"), Value("normalize")}, "value_error",
                     "Value error, this callback twin does not normalise", *normalize);
    }
  }
  if (out.a.num_elements() != out.b.num_elements()) {
    return Invalid({Value("inputs")}, "value_error",
                   "Value error, a and b must have the same shape. Got " + out.a.shape().ToString() +
                       " and " + out.b.shape().ToString() + " instead.",
                   *inputs);
  }
  return out;
}

Result<Tensor> Float64(Shape shape) { return Tensor::Allocate(Dtype::kFloat64, std::move(shape)); }

Result<Value> Apply(const VectoraddInputs& in) {
  const int64_t n = in.a.num_elements();
  TESS_ASSIGN_OR_RETURN(Tensor result, Float64(in.a.shape()));
  for (int64_t i = 0; i < n; ++i) {
    result.data_as<double>()[i] = in.s * in.a.data_as<float>()[i] + in.b.data_as<float>()[i];
  }
  return Value::Dict{{"result", Value(std::move(result))}};
}

// d result / d a = s I, d result / d b = I, d result / d s = a.
Result<Value> Jacobian(const VectoraddInputs& in, const std::vector<std::string>& wrt) {
  const int64_t n = in.a.num_elements();
  Value::Dict partials;
  for (const std::string& name : wrt) {
    TESS_ASSIGN_OR_RETURN(Shape shape, name == "s" ? Shape::Make({n}) : Shape::Make({n, n}));
    TESS_ASSIGN_OR_RETURN(Tensor d, Float64(std::move(shape)));
    double* out = d.data_as<double>();
    for (int64_t i = 0; i < d.num_elements(); ++i) out[i] = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (name == "s") {
        out[i] = in.a.data_as<float>()[i];
      } else {
        out[i * n + i] = name == "a" ? in.s : 1.0;
      }
    }
    partials.set(name, Value(std::move(d)));
  }
  return Value::Dict{{"result", Value(std::move(partials))}};
}

// jac_inputs ⊆ {a, b, s} and jac_outputs == {result}, at least one each.
Result<std::vector<std::string>> ReadPathSet(const Value& body, const char* field,
                                             const std::vector<std::string>& allowed) {
  const Value* v = body.as_dict().find(field);
  if (v == nullptr) return Invalid({Value(field)}, "missing", "Field required", body);
  if (!v->is_list() || v->as_list().empty()) {
    return Invalid({Value(field)}, "too_short", "Set should have at least 1 item after validation", *v);
  }
  std::vector<std::string> out;
  for (const Value& item : v->as_list()) {
    if (!item.is_string() || std::find(allowed.begin(), allowed.end(), item.as_string()) == allowed.end()) {
      return Invalid({Value(field)}, "literal_error", "Input should be a differentiable path", item);
    }
    out.push_back(item.as_string());
  }
  return out;
}

}  // namespace

std::shared_ptr<const CallbackComponent> CallbackVectoradd(Value document) {
  std::map<EndpointId, CallbackComponent::Endpoint> endpoints;
  endpoints[EndpointId::kApply] = [](const Value& body) -> Result<PreparedCall> {
    TESS_ASSIGN_OR_RETURN(VectoraddInputs in, ReadInputs(body));
    if (in.a.num_elements() == 0) {
      // A failure the kind names itself, as a Python module's raised class.
      return PreparedCall([](const CallContext&) {
        return Result<Value>(Status::InvalidArgument("nothing to add")
                                 .WithDetail(std::make_shared<ExceptionDetail>("ValueError", "ValueError")));
      });
    }
    return PreparedCall([in](const CallContext&) {
      std::printf("callback apply on %lld elements\n", static_cast<long long>(in.a.num_elements()));
      if (in.s < 0) throw std::invalid_argument("s must not be negative");
      return Apply(in);
    });
  };
  endpoints[EndpointId::kJacobian] = [](const Value& body) -> Result<PreparedCall> {
    TESS_ASSIGN_OR_RETURN(VectoraddInputs in, ReadInputs(body));
    TESS_ASSIGN_OR_RETURN(std::vector<std::string> wrt, ReadPathSet(body, "jac_inputs", {"a", "b", "s"}));
    TESS_RETURN_IF_ERROR(ReadPathSet(body, "jac_outputs", {"result"}).status());
    return PreparedCall([in, wrt](const CallContext&) { return Jacobian(in, wrt); });
  };
  return std::make_shared<const CallbackComponent>("vectoradd-callbacks", std::move(document),
                                                   std::move(endpoints));
}

}  // namespace tesscpp::runtime
