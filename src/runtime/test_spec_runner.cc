#include "runtime/test_spec_runner.h"

#include <cmath>
#include <complex>
#include <map>
#include <regex>
#include <sstream>

#include "schema/array_coercion.h"
#include "schema/validate.h"
#include "tesscpp/internal/core/python_exception.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::runtime {
namespace {

// Python's exception classes a TestSpec may name, each with its base class.
// Builtins missing here are valid names that no C++ failure maps to.
const std::map<std::string, std::string>& PythonBases() {
  static const std::map<std::string, std::string> kBases = {
      {"BaseException", ""},
      {"Exception", "BaseException"},
      {"ValueError", "Exception"},
      {"pydantic.ValidationError", "ValueError"},
      {"TypeError", "Exception"},
      {"LookupError", "Exception"},
      {"KeyError", "LookupError"},
      {"IndexError", "LookupError"},
      {"RuntimeError", "Exception"},
      {"NotImplementedError", "RuntimeError"},
      {"OSError", "Exception"},
      {"FileNotFoundError", "OSError"},
      {"MemoryError", "Exception"},
      {"ArithmeticError", "Exception"},
      {"OverflowError", "ArithmeticError"},
      {"ZeroDivisionError", "ArithmeticError"},
      {"AssertionError", "Exception"},
      {"AttributeError", "Exception"},
      {"StopIteration", "Exception"},
      {"TimeoutError", "OSError"},
  };
  return kBases;
}

// pydantic's ValidationError is importable under these names.
std::string CanonicalName(const std::string& name) {
  if (name == "pydantic_core.ValidationError" || name == "pydantic_core._pydantic_core.ValidationError") {
    return "pydantic.ValidationError";
  }
  return name;
}

bool IsSubclass(std::string cls, const std::string& base) {
  const auto& bases = PythonBases();
  while (!cls.empty()) {
    if (cls == base) return true;
    auto it = bases.find(cls);
    if (it == bases.end()) return false;
    cls = it->second;
  }
  return false;
}

std::string ShortName(const std::string& cls) {
  const size_t dot = cls.rfind('.');
  return dot == std::string::npos ? cls : cls.substr(dot + 1);
}

Value Outcome(const char* status, std::string message, const std::string& endpoint) {
  return Value::Dict{
      {"status", Value(status)}, {"message", Value(std::move(message))}, {"endpoint", Value(endpoint)}};
}

bool IsInexact(Dtype d) { return IsFloating(d) || IsComplex(d); }

std::string FormatNumber(std::complex<double> v, bool complex) {
  std::ostringstream out;
  out.precision(17);
  if (complex) {
    out << "(" << v.real() << (v.imag() < 0 ? "" : "+") << v.imag() << "j)";
  } else {
    out << v.real();
  }
  return out.str();
}

std::string JoinPath(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

struct Comparison {
  double atol;
  double rtol;
  std::vector<std::string> structure_errors;
  std::vector<std::string> discrepancies;
};

void CompareTensors(const Tensor& got, const Tensor& want, const std::vector<std::string>& path,
                    Comparison& c) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    c.structure_errors.push_back(JoinPath(path) + ": expected array of shape " + want.shape().ToString() +
                                 " and dtype " + std::string(DtypeName(want.dtype())) + ", got shape " +
                                 got.shape().ToString() + " and dtype " +
                                 std::string(DtypeName(got.dtype())));
    return;
  }
  const bool inexact = IsInexact(want.dtype());
  const bool complex = IsComplex(want.dtype());
  std::vector<std::string> diffs;
  int64_t count = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const auto g = schema::ElementAt(got, i);
    const auto w = schema::ElementAt(want, i);
    bool close = g == w;
    if (inexact && !close) {
      const bool both_nan =
          (std::isnan(g.real()) || std::isnan(g.imag())) && (std::isnan(w.real()) || std::isnan(w.imag()));
      close = both_nan || std::abs(g - w) <= c.atol + c.rtol * std::abs(w);
    }
    if (close) continue;
    if (++count <= 100) {
      diffs.push_back("  index " + std::to_string(i) + ": obtained " + FormatNumber(g, complex) +
                      ", expected " + FormatNumber(w, complex));
    }
  }
  if (count == 0) return;
  std::string msg = JoinPath(path) + "\nShape: " + want.shape().ToString() +
                    "\n  Number of differences: " + std::to_string(count) + " / " +
                    std::to_string(want.num_elements());
  for (const std::string& d : diffs) msg += "\n" + d;
  c.discrepancies.push_back(std::move(msg));
}

// Structure (types, keys, lengths, shapes, dtypes) and then values.
void Compare(const Value& got, const Value& want, std::vector<std::string>& path, Comparison& c) {
  if (got.is_tensor()) {
    if (want.is_tensor()) return CompareTensors(got.as_tensor(), want.as_tensor(), path, c);
    // A plain number or list where the output is an array: read it as an
    // array of the output's dtype (what the reference's model validation does).
    auto converted =
        schema::ValidateValue(SchemaType::Array(ShapeSpec::AnyRank(), got.as_tensor().dtype()), want);
    if (!converted.ok()) {
      c.structure_errors.push_back(JoinPath(path) +
                                   ": expected value is not an array: " + converted.status().message());
      return;
    }
    return CompareTensors(got.as_tensor(), converted->as_tensor(), path, c);
  }
  if (got.is_dict() && want.is_dict()) {
    std::vector<std::string> missing;
    std::vector<std::string> extra;
    for (const auto& [k, v] : want.as_dict()) {
      if (!got.as_dict().contains(k)) missing.push_back(k);
    }
    for (const auto& [k, v] : got.as_dict()) {
      if (!want.as_dict().contains(k)) extra.push_back(k);
    }
    if (!missing.empty() || !extra.empty()) {
      std::string msg = JoinPath(path) + ": keys differ";
      for (const auto& k : missing) msg += "\n  missing: " + k;
      for (const auto& k : extra) msg += "\n  unexpected: " + k;
      c.structure_errors.push_back(std::move(msg));
      return;
    }
    for (const auto& [k, v] : want.as_dict()) {
      path.push_back(k);
      Compare(got.as_dict().at(k), v, path, c);
      path.pop_back();
    }
    return;
  }
  if (got.is_list() && want.is_list()) {
    if (got.as_list().size() != want.as_list().size()) {
      c.structure_errors.push_back(JoinPath(path) + ": expected " + std::to_string(want.as_list().size()) +
                                   " items, got " + std::to_string(got.as_list().size()));
      return;
    }
    for (size_t i = 0; i < got.as_list().size(); ++i) {
      path.push_back("[" + std::to_string(i) + "]");
      Compare(got.as_list()[i], want.as_list()[i], path, c);
      path.pop_back();
    }
    return;
  }
  if (got.is_number() && want.is_number()) {
    const double g = got.as_number();
    const double w = want.as_number();
    const bool inexact = got.is_float() || want.is_float();
    const bool close = inexact ? std::abs(g - w) <= c.atol + c.rtol * std::abs(w) : g == w;
    if (!close) {
      c.discrepancies.push_back(JoinPath(path) + ":\n  Expected: " + FormatNumber(w, false) +
                                "\n  Obtained: " + FormatNumber(g, false));
    }
    return;
  }
  if (got.kind() != want.kind()) {
    c.structure_errors.push_back(JoinPath(path) + ": expected " + std::string(Value::KindName(want.kind())) +
                                 ", got " + std::string(Value::KindName(got.kind())));
    return;
  }
  if (!(got == want)) c.discrepancies.push_back(JoinPath(path) + ": values differ");
}

std::shared_ptr<const ModelSchema> TestSpecModel() {
  static const auto kModel = *ModelSchema::Make(
      "TestSpec",
      {Field("endpoint", SchemaType::String()), Field("payload", SchemaType::Dict(SchemaType::Any())),
       Field("expected_outputs", SchemaType::Optional(SchemaType::Dict(SchemaType::Any())), "", Value()),
       Field("expected_exception", SchemaType::Optional(SchemaType::String()), "", Value()),
       Field("expected_exception_regex", SchemaType::Optional(SchemaType::String()), "", Value()),
       Field("atol", SchemaType::Float(), "", Value(1e-8)),
       Field("rtol", SchemaType::Float(), "", Value(1e-5)),
       Field("skip_output_path_checks", SchemaType::Bool(), "", Value(false)),
       Field("cli_config", SchemaType::Optional(SchemaType::Dict(SchemaType::Any())), "", Value())});
  return kModel;
}

}  // namespace

std::string PythonExceptionFor(const std::string& cpp_exception_type, StatusCode code) {
  if (!cpp_exception_type.empty()) {
    if (cpp_exception_type == "std::invalid_argument" || cpp_exception_type == "std::domain_error" ||
        cpp_exception_type == "std::length_error") {
      return "ValueError";
    }
    if (cpp_exception_type == "std::out_of_range") return "IndexError";
    if (cpp_exception_type == "std::bad_alloc") return "MemoryError";
    if (cpp_exception_type == "std::overflow_error" || cpp_exception_type == "std::underflow_error" ||
        cpp_exception_type == "std::range_error") {
      return "ArithmeticError";
    }
    return "RuntimeError";
  }
  return core::PythonExceptionName(code, core::PythonContext::kTestEndpoint);
}

namespace {

// A TestSpec that cannot be run: a value_error at `loc`, as the reference's validator raises.
Status SpecError(const Value& body, const std::string& msg, std::vector<Value> loc) {
  return ValidationFailure({ValidationIssue{"value_error", std::move(loc), "Value error, " + msg, body,
                                            Value::Dict{{"error", Value::Dict{}}}}});
}

// An endpoint that raised `outcome.exception`, judged against the spec.
Result<Value> JudgeException(const EndpointOutcome& outcome, const Value::Dict& s,
                             const std::string& expected_exception, const std::string& endpoint,
                             const Value& body) {
  if (expected_exception.empty()) {
    if (outcome.invalid_payload) {
      return Outcome(
          "failed",
          "inputs do not conform to InputSchema (perhaps the InputSchema has recently changed?):\n" +
              outcome.message,
          endpoint);
    }
    return Outcome("error", ShortName(outcome.exception) + ": " + outcome.message, endpoint);
  }
  if (!IsSubclass(outcome.exception, expected_exception)) {
    return Outcome("failed",
                   "Expected " + ShortName(expected_exception) + ", but got " + ShortName(outcome.exception) +
                       ": " + outcome.message,
                   endpoint);
  }
  if (const Value& regex = s.at("expected_exception_regex"); !regex.is_null()) {
    bool matches = false;
    try {
      matches = std::regex_search(outcome.message, std::regex(regex.as_string()));
    } catch (const std::regex_error& e) {
      return SpecError(body, std::string("expected_exception_regex is not a valid regex: ") + e.what(),
                       {Value("expected_exception_regex")});
    }
    if (!matches) {
      return Outcome("failed",
                     "Exception message does not match regex.\n  Expected pattern: " + regex.as_string() +
                         "\n  Actual message: " + outcome.message,
                     endpoint);
    }
  }
  return Outcome("passed", "", endpoint);
}

// An endpoint that answered `outputs`, judged against the spec's expected outputs.
Value JudgeOutputs(const Value& outputs, const Value::Dict& s, const std::string& endpoint) {
  Comparison c{s.at("atol").as_number(), s.at("rtol").as_number(), {}, {}};
  std::vector<std::string> path;
  Compare(outputs, s.at("expected_outputs"), path, c);
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : "\n\n") + item;
    return out;
  };
  if (!c.structure_errors.empty())
    return Outcome("failed", "Structure mismatch.\n\n" + join(c.structure_errors), endpoint);
  if (!c.discrepancies.empty()) {
    return Outcome("failed", "Values are not sufficiently close.\n\n" + join(c.discrepancies), endpoint);
  }
  return Outcome("passed", "", endpoint);
}

}  // namespace

Result<Value> RunTestSpec(const Value& body, const std::vector<std::string>& endpoints,
                          const EndpointRunner& run) {
  // Unknown keys are ignored, as the reference's TestSpec does.
  Value::Dict known;
  if (body.is_dict()) {
    for (const FieldSchema& f : TestSpecModel()->fields()) {
      if (const Value* v = body.as_dict().find(f.name)) known.set(f.name, *v);
    }
  }
  TESS_ASSIGN_OR_RETURN(
      Value spec, schema::ValidateModel(*TestSpecModel(), body.is_dict() ? Value(std::move(known)) : body));
  const Value::Dict& s = spec.as_dict();
  const bool has_outputs = !s.at("expected_outputs").is_null();
  const bool has_exception = !s.at("expected_exception").is_null();
  std::string expected_exception;
  if (has_exception) {
    expected_exception = CanonicalName(s.at("expected_exception").as_string());
    if (PythonBases().count(expected_exception) == 0) {
      return SpecError(
          body,
          "unknown exception '" + expected_exception +
              "': a C++ Tesseract reports Python builtin exceptions and pydantic.ValidationError",
          {Value("expected_exception")});
    }
  }
  if (has_outputs == has_exception) {
    return SpecError(body,
                     has_outputs ? "Cannot specify both 'expected_outputs' and 'expected_exception'. "
                                   "Provide exactly one."
                                 : "Must specify either 'expected_outputs' or 'expected_exception'. "
                                   "Provide exactly one.",
                     {});
  }
  const std::string& endpoint = s.at("endpoint").as_string();
  if (endpoint == "test" || std::find(endpoints.begin(), endpoints.end(), endpoint) == endpoints.end() ||
      endpoint == "health") {
    std::string available;
    for (const std::string& e : endpoints) available += (available.empty() ? "'" : ", '") + e + "'";
    return Outcome("failed",
                   "Endpoint " + endpoint + " not found\n  Available endpoints: [" + available + "]",
                   endpoint);
  }
  const EndpointOutcome outcome = run(endpoint, s.at("payload"));
  if (!outcome.outputs) return JudgeException(outcome, s, expected_exception, endpoint, body);
  if (has_exception) {
    return Outcome("failed", "Expected " + ShortName(expected_exception) + ", but no exception was raised",
                   endpoint);
  }
  return JudgeOutputs(*outcome.outputs, s, endpoint);
}

}  // namespace tesscpp::runtime
