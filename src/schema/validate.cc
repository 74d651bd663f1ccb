// validate.cc: pydantic's lax-mode validation of request Values.
//
// Messages and types are pydantic 2's, checked against the reference runtime in
// tests/data/golden/runtime/*.cases.json: a model collects every issue of its
// fields (in declaration order), then extra keys, and runs its validators only
// when all of that passed.
#include "schema/validate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "schema/array_coercion.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/internal/schema/array_cast.h"

namespace tesscpp::schema {
namespace {

using Issues = std::vector<ValidationIssue>;

void Add(Issues& issues, std::string type, std::string msg, const Value& input, Value ctx = Value()) {
  issues.push_back(ValidationIssue{std::move(type), {}, std::move(msg), input, std::move(ctx)});
}

// Moves the issues of a failed sub-validation into `issues` under `segment`.
void Absorb(Issues& issues, const Status& status, const Value& segment) {
  if (const ValidationDetail* detail = GetValidationDetail(status)) {
    for (ValidationIssue issue : detail->issues()) {
      issue.loc.insert(issue.loc.begin(), segment);
      issues.push_back(std::move(issue));
    }
    return;
  }
  // Not a validation problem (memory, I/O): report it where it happened.
  issues.push_back(ValidationIssue{"value_error",
                                   {segment},
                                   "Value error, " + status.message(),
                                   Value(),
                                   Value::Dict{{"error", Value::Dict{}}}});
}

std::string Trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string_view::npos) return "";
  return std::string(s.substr(first, s.find_last_not_of(" \t\n\r\f\v") - first + 1));
}

// pydantic parses int strings after stripping whitespace and underscores
// between digits, and accepts an integral float spelling ("5.0").
std::optional<Value> ParseIntString(std::string_view text, bool* too_large) {
  std::string s = Trim(text);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    digits += s[i];
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (!digits.empty() && digits.front() != '+' && end == digits.data() + digits.size()) {
    if (ec == std::errc()) return Value(value);
    if (ec == std::errc::result_out_of_range) *too_large = true;
    return std::nullopt;
  }
  double d = 0;
  auto [dend, dec] = std::from_chars(digits.data(), digits.data() + digits.size(), d);
  if (dec == std::errc() && dend == digits.data() + digits.size() && std::isfinite(d) && d == std::floor(d) &&
      std::fabs(d) < 9.2e18) {
    return Value(static_cast<int64_t>(d));
  }
  return std::nullopt;
}

Result<Value> ValidateInt(const Value& input) {
  Issues issues;
  if (input.is_int() || input.is_bool()) {
    if (input.is_bool()) return Value(int64_t{input.as_bool() ? 1 : 0});
    return input;
  }
  if (input.is_float()) {
    const double d = input.as_number();
    if (!std::isfinite(d) || d != std::floor(d)) {
      Add(issues, "int_from_float", "Input should be a valid integer, got a number with a fractional part",
          input);
    } else if (std::fabs(d) >= 9.223372036854775807e18) {
      Add(issues, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size",
          input);
    } else {
      return Value(static_cast<int64_t>(d));
    }
  } else if (input.is_string()) {
    bool too_large = false;
    if (auto parsed = ParseIntString(input.as_string(), &too_large)) return *parsed;
    if (too_large) {
      Add(issues, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size",
          input);
    } else {
      Add(issues, "int_parsing", "Input should be a valid integer, unable to parse string as an integer",
          input);
    }
  } else {
    Add(issues, "int_type", "Input should be a valid integer", input);
  }
  return ValidationFailure(std::move(issues));
}

Result<Value> ValidateFloat(const Value& input) {
  if (input.is_number()) return Value(input.as_number());
  if (input.is_bool()) return Value(input.as_bool() ? 1.0 : 0.0);
  if (input.is_string()) {
    std::string s = Trim(input.as_string());
    std::string lower = s;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const bool negative = !lower.empty() && lower[0] == '-';
    const std::string unsigned_part =
        (!lower.empty() && (lower[0] == '-' || lower[0] == '+')) ? lower.substr(1) : lower;
    if (unsigned_part == "inf" || unsigned_part == "infinity") return Value(negative ? -INFINITY : INFINITY);
    if (unsigned_part == "nan") return Value(NAN);
    double d = 0;
    const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, s.data() + s.size(), d);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return Value(d);
    return ValidationFailure("float_parsing",
                             "Input should be a valid number, unable to parse string as a number", input);
  }
  return ValidationFailure("float_type", "Input should be a valid number", input);
}

Result<Value> ValidateBool(const Value& input) {
  if (input.is_bool()) return input;
  if (input.is_int() && !input.is_big_uint() && (input.as_int() == 0 || input.as_int() == 1)) {
    return Value(input.as_int() == 1);
  }
  if (input.is_float() && (input.as_number() == 0.0 || input.as_number() == 1.0))
    return Value(input.as_number() == 1.0);
  if (input.is_string()) {
    std::string s = input.as_string();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* yes : {"1", "on", "t", "true", "y", "yes"}) {
      if (s == yes) return Value(true);
    }
    for (const char* no : {"0", "off", "f", "false", "n", "no"}) {
      if (s == no) return Value(false);
    }
  }
  if (input.is_string() || input.is_int()) {
    return ValidationFailure("bool_parsing", "Input should be a valid boolean, unable to interpret input",
                             input);
  }
  return ValidationFailure("bool_type", "Input should be a valid boolean", input);
}

Result<Value> ValidateShapeDType(const SchemaType& type, const Value& input);

// Path.resolve() (strict=False): absolute, symlinks of the existing part
// followed, "." and ".." folded; nullopt where that cannot be done (a name
// too long, a directory that cannot be read): such a path is refused, never
// folded lexically, which would step over a symlink's "..".
std::optional<std::filesystem::path> Resolved(const std::filesystem::path& p) {
  std::error_code ec;
  auto resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  if (ec) return std::nullopt;
  return resolved;
}

// str(PurePath(text)): repeated and trailing slashes and "." segments dropped
// ("./../x" is "../x"), ".." kept.
std::string PurePathText(const std::string& text) {
  std::string out = !text.empty() && text.front() == '/' ? "/" : "";
  std::string segment;
  std::istringstream parts(text);
  while (std::getline(parts, segment, '/')) {
    if (segment.empty() || segment == ".") continue;
    if (!out.empty() && out.back() != '/') out += '/';
    out += segment;
  }
  return out.empty() ? "." : out;
}

// PurePath.is_relative_to.
bool Inside(const std::filesystem::path& p, const std::filesystem::path& root) {
  auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return r == root.end() || (std::next(r) == root.end() && r->empty());
}

Status PathValueError(const Value& input, const std::string& message) {
  return ValidationFailure("value_error", "Value error, " + message, input,
                           Value::Dict{{"error", Value::Dict{}}});
}

// tesseract-core's InputPath and OutputPath validators, with their messages.
Result<Value> ValidatePath(const SchemaType& type, const Value& input, const ValidateOptions& options) {
  if (!input.is_string()) {
    // FastAPI validates bodies in pydantic's Python mode, where a path is
    // Path | str: both members report.
    return ValidationFailure(
        {ValidationIssue{"is_instance_of",
                         {Value("is-instance[Path]")},
                         "Input should be an instance of Path",
                         input,
                         Value::Dict{{"class", Value("Path")}}},
         ValidationIssue{"string_type", {Value("str")}, "Input should be a valid string", input, Value()}});
  }
  const std::filesystem::path given(input.as_string());
  const std::string shown = PurePathText(input.as_string());
  std::error_code ec;
  if (type.kind() == SchemaType::Kind::kInputPath) {
    const auto root = Resolved(options.input_path.empty() ? "." : options.input_path);
    const auto resolved = root ? Resolved(*root / given) : std::nullopt;
    if (!resolved || !Inside(*resolved, *root)) {
      const std::string got = resolved ? resolved->string() : (std::filesystem::absolute(given, ec)).string();
      return PathValueError(input, "Invalid input file reference: " + shown +
                                       ". Expected path to be relative to " +
                                       (root ? root->string() : options.input_path) + ", but got " + got +
                                       ". File references have to be relative to --input-path.");
    }
    if (!std::filesystem::exists(*resolved, ec)) {
      return PathValueError(input, "Input path " + resolved->string() + " does not exist.");
    }
    return Value(resolved->string());
  }
  const auto root = Resolved(options.output_path.empty() ? "." : options.output_path);
  const auto resolved = root ? Resolved(given.is_absolute() ? given : *root / given) : std::nullopt;
  if (!resolved || !Inside(*resolved, *root)) {
    return PathValueError(input, "Output path " + shown + " escapes output directory " +
                                     (root ? root->string() : options.output_path) + ".");
  }
  if (!std::filesystem::exists(*resolved, ec)) {
    return PathValueError(input, "Output path " + resolved->string() + " does not exist inside Tesseract");
  }
  return Value(options.relative_output_paths ? resolved->lexically_relative(*root).string()
                                             : resolved->string());
}

}  // namespace

Result<Value> ValidateValue(const SchemaType& type, const Value& input, const ValidateOptions& options) {
  BufferPool* pool = options.pool != nullptr ? options.pool : BufferPool::Default();
  switch (type.kind()) {
    case SchemaType::Kind::kArray: return schema::CoerceArray(type, input, pool);
    case SchemaType::Kind::kShapeDType: return ValidateShapeDType(type, input);
    case SchemaType::Kind::kInt: return ValidateInt(input);
    case SchemaType::Kind::kFloat: return ValidateFloat(input);
    case SchemaType::Kind::kBool: return ValidateBool(input);
    case SchemaType::Kind::kString:
      if (input.is_string()) return input;
      return ValidationFailure("string_type", "Input should be a valid string", input);
    case SchemaType::Kind::kAny: return input;
    case SchemaType::Kind::kInputPath:
    case SchemaType::Kind::kOutputPath: return ValidatePath(type, input, options);
    case SchemaType::Kind::kOptional:
      if (input.is_null()) return input;
      return ValidateValue(type.item(), input, options);
    case SchemaType::Kind::kModel: return ValidateModel(*type.model(), input, options);
    case SchemaType::Kind::kList: {
      if (!input.is_list()) return ValidationFailure("list_type", "Input should be a valid list", input);
      Issues issues;
      Value::List out;
      int64_t index = 0;
      for (const Value& item : input.as_list()) {
        auto v = ValidateValue(type.item(), item, options);
        if (v.ok()) {
          out.push_back(std::move(*v));
        } else {
          Absorb(issues, v.status(), Value(index));
        }
        ++index;
      }
      if (!issues.empty()) return ValidationFailure(std::move(issues));
      return Value(std::move(out));
    }
    case SchemaType::Kind::kDict: {
      if (!input.is_dict())
        return ValidationFailure("dict_type", "Input should be a valid dictionary", input);
      Issues issues;
      Value::Dict out;
      for (const auto& [key, item] : input.as_dict()) {
        auto v = ValidateValue(type.item(), item, options);
        if (v.ok()) {
          out.set(key, std::move(*v));
        } else {
          Absorb(issues, v.status(), Value(key));
        }
      }
      if (!issues.empty()) return ValidationFailure(std::move(issues));
      return Value(std::move(out));
    }
  }
  return Status::Internal("unknown schema type");
}

Result<Value> ValidateModel(const ModelSchema& model, const Value& input, const ValidateOptions& options) {
  if (!input.is_dict()) {
    return ValidationFailure("model_attributes_type",
                             "Input should be a valid dictionary or object to extract fields from", input);
  }
  const Value::Dict& fields = input.as_dict();
  Issues issues;
  Value::Dict out;
  for (const FieldSchema& field : model.fields()) {
    const Value* value = fields.find(field.name);
    if (value == nullptr && !field.default_value) {
      issues.push_back(ValidationIssue{"missing", {Value(field.name)}, "Field required", input, Value()});
      continue;
    }
    if (value == nullptr && field.type.kind() == SchemaType::Kind::kShapeDType) {
      // pydantic does not validate defaults: abstract_eval keeps an array
      // field's concrete default (e.g. 1.0) where a ShapeDType would go.
      out.set(field.name, *field.default_value);
      continue;
    }
    auto validated = ValidateValue(field.type, value != nullptr ? *value : *field.default_value, options);
    if (validated.ok()) {
      out.set(field.name, std::move(*validated));
    } else {
      Absorb(issues, validated.status(), Value(field.name));
    }
  }
  for (const auto& [key, value] : fields) {
    if (model.field(key) == nullptr) {
      issues.push_back(
          ValidationIssue{"extra_forbidden", {Value(key)}, "Extra inputs are not permitted", value, Value()});
    }
  }
  if (!issues.empty()) return ValidationFailure(std::move(issues));
  Value result(std::move(out));
  for (const ModelValidator& validator : model.validators()) {
    Status status = validator(result);
    if (!status.ok()) {
      return ValidationFailure("value_error", "Value error, " + status.message(), input,
                               Value::Dict{{"error", Value::Dict{}}});
    }
  }
  return result;
}

namespace {

// abstract_eval leaves: {"shape": [...], "dtype": "..."}; extra keys are ignored
// (so a full arraydict works too); the shape must match exactly (no broadcast).
Result<Value> ValidateShapeDType(const SchemaType& type, const Value& input) {
  static const auto kModel = *ModelSchema::Make(
      "ShapeDType",
      {Field("shape", SchemaType::List(SchemaType::Int())), Field("dtype", SchemaType::String())});
  if (!input.is_dict()) {
    return ValidationFailure("model_attributes_type",
                             "Input should be a valid dictionary or object to extract fields from", input);
  }
  Value::Dict known;
  for (const char* key : {"shape", "dtype"}) {
    if (const Value* v = input.as_dict().find(key)) known.set(key, *v);
  }
  TESS_ASSIGN_OR_RETURN(Value parsed, ValidateModel(*kModel, Value(std::move(known))));
  const std::string& dtype_name = parsed.as_dict().at("dtype").as_string();
  auto dtype = DtypeFromName(dtype_name);
  if (!dtype.ok()) {
    return ValidationFailure({ValidationIssue{"value_error",
                                              {Value("dtype")},
                                              "Value error, " + dtype.status().message(),
                                              Value(dtype_name),
                                              Value::Dict{{"error", Value::Dict{}}}}});
  }
  std::vector<int64_t> dims;
  for (const Value& d : parsed.as_dict().at("shape").as_list()) dims.push_back(d.as_int());
  const ShapeSpec& spec = type.shape();
  bool fits = spec.any_rank() || spec.rank() == static_cast<int>(dims.size());
  for (size_t i = 0; fits && !spec.any_rank() && i < dims.size(); ++i) {
    fits = !spec.dims()[i] || *spec.dims()[i] == dims[i];
  }
  if (!fits) {
    std::string expected = "(";
    for (size_t i = 0; i < spec.dims().size(); ++i) {
      expected += (i ? ", " : "") + (spec.dims()[i] ? std::to_string(*spec.dims()[i]) : std::string("None"));
    }
    expected += spec.dims().size() == 1 ? ",)" : ")";
    return ValidationFailure(
        "value_error",
        "Value error, Expected shape: " + (spec.any_rank() ? std::string("Ellipsis") : expected) +
            ". Found: " + FormatShape(dims) + ".",
        input, Value::Dict{{"error", Value::Dict{}}});
  }
  // The dtype resolves as an array's would (tesseract-core's resolve_dtype):
  // to the declared one where it casts safely, else array_dtype_mismatch.
  Dtype resolved = *dtype;
  if (type.dtype() && *type.dtype() != *dtype) {
    if (!Castable(*dtype, *type.dtype())) {
      const std::string actual(DtypeName(*dtype)), expected(DtypeName(*type.dtype()));
      return ValidationFailure("array_dtype_mismatch",
                               "Array dtype '" + actual + "' cannot be safely cast to '" + expected + "'",
                               input, Value::Dict{{"actual_dtype", actual}, {"expected_dtype", expected}});
    }
    resolved = *type.dtype();
  }
  Value::List shape_values;
  for (int64_t d : dims) shape_values.push_back(Value(d));
  return Value(Value::Dict{{"shape", Value(std::move(shape_values))}, {"dtype", Value(DtypeName(resolved))}});
}

}  // namespace
}  // namespace tesscpp::schema
