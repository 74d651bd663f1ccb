#include "cpp_kind/gradient_request.h"

#include <algorithm>

#include "runtime/py_text.h"
#include "schema/validate.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::cpp_kind {
namespace {

// "jvp_inputs", "jvp_outputs": the request's path-set fields.
std::string SetField(core::EndpointId endpoint, bool inputs) {
  return std::string(core::Endpoint(endpoint).short_name) + (inputs ? "_inputs" : "_outputs");
}

// The value at a concrete path ("mesh.points", "layers.[0].w", "d.{k}") of
// validated inputs, or nullptr.
const Value* ValueAtPath(const Value& root, std::string_view path_text) {
  auto path = Path::Parse(path_text);
  return path.ok() ? path->Find(root) : nullptr;
}

// One item of a path set: a literal of the union, or a string matching one
// of its patterns. The issues follow pydantic's union reporting: one per
// member, tagged with the member's name when there are several.
void CheckPathItem(const std::vector<DifferentiablePath>& paths, const Value& item, const Value& loc_index,
                   const char* field, std::vector<ValidationIssue>& issues) {
  if (item.is_string() && FindDifferentiablePath(paths, item.as_string()) != nullptr) return;
  const bool tagged = paths.size() > 1;
  for (const DifferentiablePath& p : paths) {
    std::vector<Value> loc{Value(field), loc_index};
    if (!p.wildcard) {
      const std::string expected = runtime::PyRepr(p.spelling);
      if (tagged) loc.emplace_back("literal[" + expected + "]");
      issues.push_back({"literal_error", loc, "Input should be " + expected, item,
                        Value::Dict{{"expected", Value(expected)}}});
    } else {
      if (tagged) loc.emplace_back("constrained-str");
      if (!item.is_string()) {
        issues.push_back({"string_type", loc, "Input should be a valid string", item, Value()});
      } else {
        const std::string pattern = "^" + p.regex + "$";
        issues.push_back({"string_pattern_mismatch", loc,
                          "String should match pattern " + runtime::PyRepr(pattern), item,
                          Value::Dict{{"pattern", Value(pattern)}}});
      }
    }
  }
}

Result<PathSet> ValidatePathSet(const std::vector<DifferentiablePath>& paths, const Value& input,
                                const char* field, std::vector<ValidationIssue>& issues) {
  if (!input.is_list()) {
    issues.push_back({"set_type", {Value(field)}, "Input should be a valid set", input, Value()});
    return Status::ValidationError(field);
  }
  const size_t before = issues.size();
  PathSet set;
  const auto& list = input.as_list();
  for (size_t i = 0; i < list.size(); ++i) {
    CheckPathItem(paths, list[i], Value(static_cast<int64_t>(i)), field, issues);
    if (list[i].is_string()) set.push_back(list[i].as_string());
  }
  if (issues.size() != before) return Status::ValidationError(field);
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  if (set.empty()) {
    issues.push_back(
        {"too_short",
         {Value(field)},
         "Set should have at least 1 item after validation, not 0",
         input,
         Value::Dict{{"field_type", Value("Set")}, {"min_length", Value(1)}, {"actual_length", Value(0)}}});
    return Status::ValidationError(field);
  }
  return set;
}

// pydantic's str(ValidationError), which the reference embeds in these
// messages: "1 validation error for <title>", then per issue its location
// (when there is one) and "  <msg> [type=<type>]".
std::string IssueSummary(const Status& status) {
  const ValidationDetail* detail = GetValidationDetail(status);
  if (detail == nullptr) return status.message();
  const size_t n = detail->issues().size();
  std::string out = std::to_string(n) + (n == 1 ? " validation error" : " validation errors") + " for Array";
  for (const ValidationIssue& issue : detail->issues()) {
    if (!issue.loc.empty()) {
      out += "\n";
      for (size_t i = 0; i < issue.loc.size(); ++i) {
        if (i > 0) out += ".";
        out += issue.loc[i].is_string() ? issue.loc[i].as_string() : std::to_string(issue.loc[i].as_int());
      }
    }
    out += "\n  " + issue.msg + " [type=" + issue.type + "]";
  }
  return out;
}

// tangent_vector (`tangent`) / cotangent_vector: a dict keyed by
// differentiable paths of arrays, whose keys must be the requested set (the
// input set for tangents, the output set for cotangents), each array shaped
// like its counterpart (the concrete input for tangents, the declared output
// for cotangents).
Result<TensorMap> ValidateVector(const GradientModels& m, const Value& input, const char* field, bool tangent,
                                 const std::optional<PathSet>& keys, const std::optional<Value>& inputs,
                                 std::vector<ValidationIssue>& issues) {
  const std::vector<DifferentiablePath>& paths = tangent ? m.input_paths : m.output_paths;
  const std::vector<Value> loc{Value(field)};
  if (!input.is_dict()) {
    issues.push_back({"dict_type", loc, "Input should be a valid dictionary", input, Value()});
    return Status::ValidationError(field);
  }
  auto value_error = [&](const std::string& msg) {
    issues.push_back(
        {"value_error", loc, "Value error, " + msg, input, Value::Dict{{"error", Value::Dict{}}}});
    return Status::ValidationError(field);
  };
  const size_t before = issues.size();
  for (const auto& [key, value] : input.as_dict()) {
    if (FindDifferentiablePath(paths, key) == nullptr) {
      const size_t first = issues.size();
      CheckPathItem(paths, Value(key), Value(key), field, issues);
      // pydantic puts "[key]" after the key for dict-key errors.
      for (size_t i = first; i < issues.size(); ++i)
        issues[i].loc.insert(issues[i].loc.begin() + 2, Value("[key]"));
    }
  }
  if (issues.size() != before) return Status::ValidationError(field);
  const char* vector_name = tangent ? "tangent vector" : "cotangent vector";
  const std::string set_name = SetField(m.endpoint, tangent);
  if (!keys) {
    return value_error(std::string("Unable to validate ") + vector_name + " as " + set_name +
                       " either missing or invalid");
  }
  std::vector<std::string> given;
  for (const auto& [key, value] : input.as_dict()) given.push_back(key);
  std::vector<std::string> sorted_given = given;
  std::sort(sorted_given.begin(), sorted_given.end());
  sorted_given.erase(std::unique(sorted_given.begin(), sorted_given.end()), sorted_given.end());
  if (sorted_given != *keys) {
    return value_error(std::string("Expected ") + vector_name + " with keys conforming to " + set_name +
                       ": " + runtime::PySetRepr(*keys) + ", got " + runtime::PySetRepr(given) + ".");
  }
  if (tangent && !inputs) {
    return value_error("Unable to validate tangent vector as inputs either missing or invalid");
  }
  TensorMap out;
  for (const auto& [key, value] : input.as_dict()) {
    const DifferentiablePath* p = FindDifferentiablePath(paths, key);
    SchemaType type = p->type;
    if (tangent) {
      const Value* ref = ValueAtPath(*inputs, key);
      if (ref == nullptr || !ref->is_tensor()) {
        return value_error("Could not find tangent_vector path " + key + " in inputs.");
      }
      const auto dims = ref->as_tensor().shape().dims();
      type = SchemaType::Array(ShapeSpec(std::vector<std::optional<int64_t>>(dims.begin(), dims.end())),
                               p->type.dtype());
    }
    auto validated = schema::ValidateValue(type, value);
    if (!validated.ok()) {
      return value_error(std::string(tangent ? "Tangent" : "Cotangent") + " vector " + runtime::PyRepr(key) +
                         ": " + IssueSummary(validated.status()));
    }
    out.insert_or_assign(key, validated->as_tensor());
  }
  return out;
}

// The vectors the endpoint's row takes, tangent first (the order of the
// model's fields), into `request`.
void ValidateVectors(const GradientModels& m, const Value& body, const std::optional<PathSet>& input_set,
                     const std::optional<PathSet>& output_set, const std::optional<Value>& inputs,
                     GradientRequest& request, std::vector<ValidationIssue>& issues) {
  const core::EndpointInfo& row = core::Endpoint(m.endpoint);
  for (const bool tangent : {true, false}) {
    const std::string field(tangent ? row.tangent_field : row.cotangent_field);
    if (field.empty()) continue;
    if (const Value* v = body.as_dict().find(field)) {
      auto vec =
          ValidateVector(m, *v, field.c_str(), tangent, tangent ? input_set : output_set, inputs, issues);
      if (vec.ok()) (tangent ? request.tangent : request.cotangent) = std::move(*vec);
    } else {
      issues.push_back({"missing", {Value(field)}, "Field required", body, Value()});
    }
  }
}

}  // namespace

Result<GradientRequest> ValidateGradientRequest(const GradientModels& m, const Value& body,
                                                const schema::ValidateOptions& options) {
  if (!body.is_dict()) {
    return ValidationFailure("model_attributes_type",
                             "Input should be a valid dictionary or object to extract fields from", body);
  }
  const Value::Dict& fields = body.as_dict();
  const std::string in_field = SetField(m.endpoint, true);
  const std::string out_field = SetField(m.endpoint, false);
  const core::EndpointInfo& row = core::Endpoint(m.endpoint);
  std::vector<ValidationIssue> issues;
  auto missing = [&](const char* name) {
    issues.push_back({"missing", {Value(name)}, "Field required", body, Value()});
  };

  GradientRequest request;
  std::optional<Value> inputs;
  if (const Value* v = fields.find("inputs")) {
    auto validated = schema::ValidateModel(*m.inputs, *v, options);
    if (validated.ok()) {
      inputs = *validated;
    } else {
      // ValidateModel always reports issues.
      const Status located = PrefixLocation(validated.status(), {Value("inputs")});
      const auto& found = GetValidationDetail(located)->issues();
      issues.insert(issues.end(), found.begin(), found.end());
    }
  } else {
    missing("inputs");
  }
  std::optional<PathSet> input_set;
  std::optional<PathSet> output_set;
  if (const Value* v = fields.find(in_field)) {
    auto set = ValidatePathSet(m.input_paths, *v, in_field.c_str(), issues);
    if (set.ok()) {
      // Concrete paths through lists and dicts must exist in the inputs.
      for (size_t i = 0; i < set->size(); ++i) {
        const std::string& p = (*set)[i];
        if (p.find_first_of("[{") == std::string::npos) continue;
        if (!inputs || ValueAtPath(*inputs, p) == nullptr) {
          issues.push_back({"value_error",
                            {Value(in_field), Value(static_cast<int64_t>(i))},
                            "Value error, Could not find " + in_field + " path " + p + " in inputs.",
                            Value(p),
                            Value::Dict{{"error", Value::Dict{}}}});
        }
      }
      input_set = *set;
    }
  } else {
    missing(in_field.c_str());
  }
  if (const Value* v = fields.find(out_field)) {
    auto set = ValidatePathSet(m.output_paths, *v, out_field.c_str(), issues);
    if (set.ok()) output_set = *set;
  } else {
    missing(out_field.c_str());
  }
  ValidateVectors(m, body, input_set, output_set, inputs, request, issues);
  for (const auto& [key, value] : fields) {
    if (key != "inputs" && key != in_field && key != out_field &&
        (row.tangent_field.empty() || key != row.tangent_field) &&
        (row.cotangent_field.empty() || key != row.cotangent_field)) {
      issues.push_back({"extra_forbidden", {Value(key)}, "Extra inputs are not permitted", value, Value()});
    }
  }
  if (!issues.empty()) return ValidationFailure(std::move(issues));
  request.inputs = std::move(*inputs);
  request.input_set = std::move(*input_set);
  request.output_set = std::move(*output_set);
  return request;
}

namespace {

std::vector<std::string> Keys(const TensorMap& map) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : map) keys.push_back(k);
  return keys;
}

}  // namespace

Result<Value> ValidateJacobianResult(const GradientModels& m, const GradientRequest& request,
                                     const JacobianMap& result) {
  std::vector<std::string> out_keys;
  for (const auto& [k, v] : result) out_keys.push_back(k);
  if (out_keys != request.output_set) {
    return Status::Internal("Error when validating output of jacobian:\nExpected keys ",
                            runtime::PySetRepr(request.output_set), " in output; got ",
                            runtime::PySetRepr(out_keys));
  }
  Value::Dict out;
  for (const auto& [out_path, blocks] : result) {
    if (Keys(blocks) != request.input_set) {
      return Status::Internal("Error when validating output of jacobian:\nExpected input keys ",
                              runtime::PySetRepr(request.input_set), ", got ",
                              runtime::PySetRepr(Keys(blocks)), " for output key ", out_path);
    }
    const ShapeSpec& out_shape = FindDifferentiablePath(m.output_paths, out_path)->type.shape();
    Value::Dict row;
    for (const auto& [in_path, block] : blocks) {
      const ShapeSpec& in_shape = FindDifferentiablePath(m.input_paths, in_path)->type.shape();
      // (*output_shape, *input_shape); with an any-rank side, only the other
      // side's dims are checked, at the corresponding end.
      const int rank = block.rank();
      std::vector<std::optional<int64_t>> dims(static_cast<size_t>(rank), kAnyDim);
      bool fits = true;
      if (!out_shape.any_rank() && !in_shape.any_rank()) {
        fits = rank == out_shape.rank() + in_shape.rank();
        if (fits) {
          std::copy(out_shape.dims().begin(), out_shape.dims().end(), dims.begin());
          std::copy(in_shape.dims().begin(), in_shape.dims().end(), dims.begin() + out_shape.rank());
        }
      } else if (!out_shape.any_rank()) {
        fits = rank >= out_shape.rank();
        if (fits) std::copy(out_shape.dims().begin(), out_shape.dims().end(), dims.begin());
      } else if (!in_shape.any_rank()) {
        fits = rank >= in_shape.rank();
        if (fits) std::copy(in_shape.dims().begin(), in_shape.dims().end(), dims.end() - in_shape.rank());
      }
      auto validated =
          fits ? schema::ValidateValue(SchemaType::Array(ShapeSpec(dims), std::nullopt), Value(block))
               : Result<Value>(Status::ValidationError("rank ", rank, " does not fit"));
      if (!validated.ok()) {
        return Status::Internal("Jacobian result [", out_path, "][", in_path, "] has shape ",
                                block.shape().ToString(), ": ", IssueSummary(validated.status()));
      }
      row.set(in_path, std::move(*validated));
    }
    out.set(out_path, Value(std::move(row)));
  }
  return Value(std::move(out));
}

Result<Value> ValidateProductResult(const GradientModels& m, const GradientRequest& request,
                                    const TensorMap& result) {
  const core::EndpointInfo& row = core::Endpoint(m.endpoint);
  const bool on_outputs = !row.answers_inputs();
  const PathSet& expected = on_outputs ? request.output_set : request.input_set;
  if (Keys(result) != expected) {
    return Status::Internal("Expected keys ", runtime::PySetRepr(expected), " in output; got ",
                            runtime::PySetRepr(Keys(result)));
  }
  Value::Dict out;
  for (const auto& [path, tensor] : result) {
    const DifferentiablePath* p = FindDifferentiablePath(on_outputs ? m.output_paths : m.input_paths, path);
    auto validated = schema::ValidateValue(p->type, Value(tensor));
    if (!validated.ok()) {
      return Status::Internal(row.noun, " result [", path, "]: ", IssueSummary(validated.status()));
    }
    out.set(path, std::move(*validated));
  }
  return Value(std::move(out));
}

}  // namespace tesscpp::cpp_kind
