// docs_page.cc: the /docs page, rendered on the server from the OpenAPI
// document. tesseract-core serves Swagger UI there, which loads its script from
// a CDN; a Tesseract often runs where nothing outside can be reached, so this
// page is plain HTML with inline CSS and no script at all.
//
// Everything taken from the document (names, descriptions, defaults) goes
// through AppendEscaped, including text inside <code> and <pre>, so a description
// cannot inject markup. Schemas are walked with depth limits and a guard on the
// models being expanded, so a recursive model renders once and then by name.
#include "runtime/docs_page.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/py_text.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp::runtime {
namespace {

constexpr std::string_view kRefPrefix = "#/components/schemas/";
// Deeper than any model a Tesseract declares; stops $ref loops and keeps
// labels and examples of pathological schemas short.
constexpr int kMaxDepth = 12;
// Example shapes: an axis of unknown size gets 1, the size tesseract-core's own
// shape examples use, so example inputs and the tangent vectors built from
// differentiable_arrays agree. An array of any rank gets a short vector.
constexpr int64_t kUnknownAxisExample = 1;
constexpr int64_t kAnyRankExampleLength = 3;
// A declared shape may be large ([1000, 1000]); rather than print a million
// numbers, such an example shrinks every axis to 1, which validation broadcasts.
constexpr int64_t kMaxExampleElements = 64;

constexpr std::array<std::string_view, 8> kMethods = {"get",   "put",  "post",    "delete",
                                                      "patch", "head", "options", "trace"};

// The gradient endpoints' vectors are dicts keyed by the paths listed in a
// sibling field, each array shaped like the input (JVP) or output (VJP) it
// belongs to. Their schemas only say "dict of arrays", so the example is built
// from the paths chosen for the sibling and the shapes in the apply wrappers'
// differentiable_arrays.
struct GradientVector {
  std::string_view field;
  std::string_view keys_from;
  std::string_view shapes_from;
};
constexpr std::array<GradientVector, 2> kGradientVectors = {{
    {"tangent_vector", "jvp_inputs", "ApplyInputSchema"},
    {"cotangent_vector", "vjp_outputs", "ApplyOutputSchema"},
}};

// abstract_eval takes the apply inputs with every array replaced by a
// ShapeDType, whose schema cannot say which shape and dtype belong where.
constexpr std::string_view kAbstractRequest = "AbstractInputSchema";
constexpr std::string_view kConcreteRequest = "ApplyInputSchema";

// ---------------------------------------------------------------- text

void AppendEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
}

// Docstrings quote code RST-style (``x``) or Markdown-style (`x`); both become
// <code>. An unmatched backtick stays text.
void AppendInline(std::string& out, std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t tick = text.find('`', at);
    if (tick == std::string_view::npos) break;
    const size_t run = text.compare(tick, 2, "``") == 0 ? 2 : 1;
    const size_t close = text.find(text.substr(tick, run), tick + run);
    if (close == std::string_view::npos || close == tick + run) {
      AppendEscaped(out, text.substr(at, tick + run - at));
      at = tick + run;
      continue;
    }
    AppendEscaped(out, text.substr(at, tick - at));
    out += "<code>";
    AppendEscaped(out, text.substr(tick + run, close - tick - run));
    out += "</code>";
    at = close + run;
  }
  if (at < text.size()) AppendEscaped(out, text.substr(at));
}

// Paragraphs are separated by blank lines; the lines of one are rejoined, as
// docstrings are hard-wrapped and indented to the code around them.
void AppendProse(std::string& out, std::string_view text) {
  std::string paragraph;
  auto flush = [&] {
    if (paragraph.empty()) return;
    out += "<p>";
    AppendInline(out, paragraph);
    out += "</p>";
    paragraph.clear();
  };
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = PyStrip(text.substr(at, end - at));
    if (line.empty()) {
      flush();
    } else {
      if (!paragraph.empty()) paragraph += ' ';
      paragraph += line;
    }
    at = end + 1;
  }
  flush();
}

// Ids are built from paths, which may hold anything; only [A-Za-z0-9_] survive.
std::string Anchor(std::string_view method, std::string_view path) {
  std::string id(method);
  for (char c : path) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '-';
  return id;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

// ---------------------------------------------------------------- JSON

// Document values hold no tensors, the one thing WriteJson can fail on.
std::string CompactJson(const Value& value) { return std::string(WriteJson(value)->string_view()); }

// Nesting depth: 0 for a scalar, 1 for a container of scalars, ...
int Depth(const Value& value) {
  int inner = 0;
  if (value.is_list()) {
    for (const Value& item : value.as_list()) inner = std::max(inner, Depth(item));
  } else if (value.is_dict()) {
    for (const auto& [key, item] : value.as_dict()) inner = std::max(inner, Depth(item));
  } else {
    return 0;
  }
  return inner + 1;
}

void AppendInlineJson(std::string& out, const Value& value) {
  if (value.is_list()) {
    out += '[';
    for (size_t i = 0; i < value.as_list().size(); ++i) {
      if (i > 0) out += ", ";
      AppendInlineJson(out, value.as_list()[i]);
    }
    out += ']';
  } else if (value.is_dict()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : value.as_dict()) {
      if (!first) out += ", ";
      first = false;
      out += CompactJson(Value(key)) + ": ";
      AppendInlineJson(out, item);
    }
    out += '}';
  } else {
    out += CompactJson(value);
  }
}

// Two-space indentation, except that lists of scalars (shapes, buffers, path
// lists) and short dicts of those (an arraydict's data) stay on one line.
void AppendPrettyJson(std::string& out, const Value& value, int indent) {
  constexpr size_t kInlineWidth = 64;
  const int depth = Depth(value);
  if (depth <= 1 && !value.is_dict()) {
    AppendInlineJson(out, value);
    return;
  }
  if (value.is_dict() && depth <= 2) {
    std::string line;
    AppendInlineJson(line, value);
    if (line.size() <= kInlineWidth) {
      out += line;
      return;
    }
  }
  const std::string pad(indent + 2, ' ');
  const bool list = value.is_list();
  out += list ? "[\n" : "{\n";
  bool first = true;
  if (list) {
    for (const Value& element : value.as_list()) {
      out += first ? pad : ",\n" + pad;
      first = false;
      AppendPrettyJson(out, element, indent + 2);
    }
  } else {
    for (const auto& [key, element] : value.as_dict()) {
      out += (first ? "" : ",\n") + pad + CompactJson(Value(key)) + ": ";
      first = false;
      AppendPrettyJson(out, element, indent + 2);
    }
  }
  out += "\n" + std::string(indent, ' ') + (list ? "]" : "}");
}

// The document comes from our own generator, but a malformed one must still
// render, so every access checks the kind instead of asserting it.
const Value::Dict* DictAt(const Value::Dict& dict, std::string_view key) {
  const Value* value = dict.find(key);
  return value != nullptr && value->is_dict() ? &value->as_dict() : nullptr;
}
const Value::List* ListAt(const Value::Dict& dict, std::string_view key) {
  const Value* value = dict.find(key);
  return value != nullptr && value->is_list() ? &value->as_list() : nullptr;
}
const std::string* StringAt(const Value::Dict& dict, std::string_view key) {
  const Value* value = dict.find(key);
  return value != nullptr && value->is_string() ? &value->as_string() : nullptr;
}

// ---------------------------------------------------------------- arrays

// An array leaf (an EncodedArrayModel), as its JSON schema declares it.
struct ArrayLeaf {
  std::string dtype;  ///< empty: any dtype
  bool any_rank = true;
  std::vector<std::string> axes;  ///< "*", "3", "2|4"
  std::vector<int64_t> example_shape;
  std::vector<std::string> flags;  ///< lowercase: "differentiable"
};

bool IsArrayLeaf(const Value::Dict& schema) {
  if (schema.contains("array_flags")) return true;
  const Value::Dict* props = DictAt(schema, "properties");
  return props != nullptr && props->contains("shape") && props->contains("dtype") && props->contains("data");
}

// tesseract-core's abstract_eval stand-in for an array; reads best as one line.
bool IsShapeDType(const Value::Dict& schema) {
  const std::string* title = StringAt(schema, "title");
  return title != nullptr && *title == "ShapeDType";
}

// The dtype schema lists every dtype that casts to the declared one and names
// the declared one in `examples`. No real dtype accepts complex input, so an
// enum with complex members and a real example is tesseract-core's "any dtype"
// (whose example is float64).
std::string DeclaredDtype(const Value::Dict& dtype) {
  if (const std::string* constant = StringAt(dtype, "const")) return *constant;
  const Value::List* allowed = ListAt(dtype, "enum");
  if (allowed != nullptr && allowed->size() == 1 && allowed->front().is_string()) {
    return allowed->front().as_string();
  }
  const Value::List* examples = ListAt(dtype, "examples");
  if (examples == nullptr || examples->empty() || !examples->front().is_string()) return {};
  const std::string& example = examples->front().as_string();
  bool admits_complex = false;
  if (allowed != nullptr) {
    for (const Value& name : *allowed) {
      admits_complex = admits_complex || (name.is_string() && name.as_string().starts_with("complex"));
    }
  }
  return admits_complex && !example.starts_with("complex") ? std::string() : example;
}

// One axis of a fixed-rank shape. tesseract-core spells a declared size n as
// enum [1, n] (a size-1 axis broadcasts), so the label shows n alone.
void DescribeAxis(const Value& axis, std::string& label, int64_t& example) {
  label = "*";
  example = kUnknownAxisExample;
  if (!axis.is_dict()) return;
  const Value::Dict& schema = axis.as_dict();
  if (const Value* constant = schema.find("const"); constant != nullptr && constant->is_int()) {
    example = constant->as_int();
    label = std::to_string(example);
    return;
  }
  const Value::List* sizes = ListAt(schema, "enum");
  if (sizes == nullptr || sizes->empty()) return;
  std::vector<std::string> declared;
  example = 1;
  for (const Value& size : *sizes) {
    if (!size.is_int()) continue;
    example = std::max(example, size.as_int());
    if (size.as_int() != 1) declared.push_back(std::to_string(size.as_int()));
  }
  label = declared.empty() ? "1" : Join(declared, "|");
}

ArrayLeaf DescribeArray(const Value::Dict& schema) {
  ArrayLeaf leaf;
  if (const Value::List* flags = ListAt(schema, "array_flags")) {
    for (const Value& flag : *flags) {
      if (!flag.is_string()) continue;
      std::string lower = flag.as_string();
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      leaf.flags.push_back(std::move(lower));
    }
  }
  const Value::Dict* props = DictAt(schema, "properties");
  if (props == nullptr) return leaf;
  if (const Value::Dict* dtype = DictAt(*props, "dtype")) leaf.dtype = DeclaredDtype(*dtype);

  const Value::Dict* shape = DictAt(*props, "shape");
  if (shape == nullptr) return leaf;
  const Value* min_items = shape->find("minItems");
  const Value* max_items = shape->find("maxItems");
  const Value::List* prefix = ListAt(*shape, "prefixItems");
  const size_t prefix_size = prefix != nullptr ? prefix->size() : 0;
  leaf.any_rank = min_items == nullptr || max_items == nullptr || !(*min_items == *max_items) ||
                  !max_items->is_int() || max_items->as_int() != static_cast<int64_t>(prefix_size);
  if (!leaf.any_rank) {
    for (size_t i = 0; i < prefix_size; ++i) {
      DescribeAxis((*prefix)[i], leaf.axes.emplace_back(), leaf.example_shape.emplace_back());
    }
  } else {
    leaf.example_shape = {kAnyRankExampleLength};
  }
  // The document's own example shape, when it fits, is what clients have seen.
  const Value::List* examples = ListAt(*shape, "examples");
  if (examples != nullptr && !examples->empty() && examples->front().is_list()) {
    const Value::List& example = examples->front().as_list();
    std::vector<int64_t> sizes;
    for (const Value& size : example) {
      if (size.is_int() && size.as_int() >= 0) sizes.push_back(size.as_int());
    }
    if (sizes.size() == example.size() && (leaf.any_rank || sizes.size() == leaf.axes.size())) {
      leaf.example_shape = std::move(sizes);
    }
  }
  return leaf;
}

std::string ArrayLabel(const ArrayLeaf& leaf) {
  std::string label = "array " + (leaf.dtype.empty() ? std::string("any-dtype") : leaf.dtype) + " ";
  if (leaf.any_rank) {
    label += "[...]";
  } else if (leaf.axes.empty()) {
    label += "scalar";
  } else {
    label += "[" + Join(leaf.axes, ", ") + "]";
  }
  if (!leaf.flags.empty()) label += " (" + Join(leaf.flags, ", ") + ")";
  return label;
}

// A json-encoded arraydict (what a server decodes). Integers count from 0, so
// index arrays are valid indices; floats from 1.0, so nothing divides by zero.
Value EncodedArray(const std::string& dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    count = size > 0 && count > kMaxExampleElements / size ? kMaxExampleElements + 1 : count * size;
  }
  if (count > kMaxExampleElements) {
    std::fill(shape.begin(), shape.end(), 1);
    count = 1;
  }
  Value::List dims(shape.begin(), shape.end());
  auto element = [&](int64_t i) -> Value {
    if (dtype == "bool") return Value(i % 2 == 0);
    if (dtype.starts_with("int") || dtype.starts_with("uint")) return Value(i);
    return Value(static_cast<double>(i + 1));
  };
  Value buffer;
  if (shape.empty()) {
    buffer = element(0);
  } else {
    Value::List items;
    for (int64_t i = 0; i < count; ++i) items.push_back(element(i));
    buffer = Value(std::move(items));
  }
  return Value::Dict{{"shape", Value(std::move(dims))},
                     {"dtype", Value(dtype)},
                     {"data", Value::Dict{{"buffer", std::move(buffer)}, {"encoding", Value("json")}}}};
}

// Gives every ShapeDType in `abstract` the shape and dtype of the arraydict at
// the same place in `concrete`, where there is one.
void CopyShapes(Value& abstract, const Value& concrete) {
  if (!abstract.is_dict() || !concrete.is_dict()) return;
  Value::Dict& shaped = abstract.as_dict();
  const Value::Dict& array = concrete.as_dict();
  if (shaped.size() == 2 && shaped.contains("shape") && shaped.contains("dtype")) {
    if (array.contains("shape") && array.contains("dtype") && array.contains("data")) {
      shaped.set("shape", array.at("shape"));
      shaped.set("dtype", array.at("dtype"));
    }
    return;
  }
  for (auto& [key, value] : shaped) {
    if (const Value* counterpart = array.find(key)) CopyShapes(value, *counterpart);
  }
}

// ---------------------------------------------------------------- renderer

class DocsRenderer {
 public:
  explicit DocsRenderer(const Value::Dict& document) : document_(document) {
    if (const Value::Dict* components = DictAt(document, "components")) {
      schemas_ = DictAt(*components, "schemas");
    }
  }

  std::string Render();

 private:
  struct Operation {
    std::string_view method;
    const std::string* path;
    const Value::Dict* op;
  };

  // -- schemas

  // The schema `schema` refers to, or nullptr.
  const Value::Dict* Deref(const Value::Dict& schema) const {
    const std::string* ref = StringAt(schema, "$ref");
    if (ref == nullptr || schemas_ == nullptr || !ref->starts_with(kRefPrefix)) return nullptr;
    const std::string_view target = *ref;
    return DictAt(*schemas_, target.substr(kRefPrefix.size()));
  }

  // The end of the $ref chain from `schema`.
  const Value::Dict& Target(const Value::Dict& schema) const {
    const Value::Dict* node = &schema;
    for (int hop = 0; hop < kMaxDepth; ++hop) {
      const Value::Dict* next = Deref(*node);
      if (next == nullptr) break;
      node = next;
    }
    return *node;
  }

  // `key` from the first schema along the $ref chain that has it: keys beside
  // a $ref (a field's description, default) override the referenced model's.
  const Value* Key(const Value::Dict& schema, std::string_view key) const {
    const Value::Dict* node = &schema;
    for (int hop = 0; node != nullptr && hop < kMaxDepth; ++hop, node = Deref(*node)) {
      if (const Value* value = node->find(key)) return value;
    }
    return nullptr;
  }

  // The model to expand into a nested table below a field: the field's own,
  // or the one inside its list, dict or union.
  const Value::Dict* ExpandableModel(const Value::Dict& schema, int depth) const;
  std::string TypeLabel(const Value::Dict& schema, int depth) const;
  std::string SingleTypeLabel(const Value::Dict& schema, std::string_view type, int depth) const;
  Value Example(const Value::Dict& schema, int depth) const;
  // Example's cases for objects and arrays, `target` resolved.
  Value ObjectExample(const Value::Dict& target, int depth) const;
  Value ArrayExample(const Value::Dict& target, int depth) const;
  Value RequestExample(const Value::Dict& schema) const;

  // -- HTML

  void AppendHeader();
  void AppendNav(const std::vector<Operation>& operations);
  void AppendOperation(const Operation& operation);
  void AppendParameters(const Value::List& parameters);
  void AppendSchema(const Value::Dict& schema);
  void AppendFieldTable(const Value::Dict& model, int depth);
  void AppendSupported();

  const Value::Dict& document_;
  const Value::Dict* schemas_ = nullptr;
  // Models whose table is being written, so a recursive model is not expanded again.
  std::vector<const Value::Dict*> expanding_;
  std::string out_;
};

const Value::Dict* DocsRenderer::ExpandableModel(const Value::Dict& schema, int depth) const {
  if (depth > kMaxDepth) return nullptr;
  const Value::Dict& target = Target(schema);
  if (IsArrayLeaf(target) || IsShapeDType(target)) return nullptr;
  if (DictAt(target, "properties") != nullptr) return &target;
  for (std::string_view key : {"items", "additionalProperties"}) {
    if (const Value::Dict* inner = DictAt(target, key)) return ExpandableModel(*inner, depth + 1);
  }
  for (std::string_view key : {"anyOf", "oneOf"}) {
    const Value::List* branches = ListAt(target, key);
    if (branches == nullptr) continue;
    for (const Value& branch : *branches) {
      if (!branch.is_dict()) continue;
      if (const Value::Dict* model = ExpandableModel(branch.as_dict(), depth + 1)) return model;
    }
  }
  return nullptr;
}

std::string DocsRenderer::TypeLabel(const Value::Dict& schema, int depth) const {
  if (depth > kMaxDepth) return "...";
  const Value::Dict& target = Target(schema);
  if (IsArrayLeaf(target)) return ArrayLabel(DescribeArray(target));
  if (IsShapeDType(target)) return "ShapeDType {shape, dtype}";
  if (const Value* constant = target.find("const")) return CompactJson(*constant);
  if (const Value::List* values = ListAt(target, "enum")) {
    // Long enums (dtype lists) are cut: the table is for reading.
    constexpr size_t kShown = 8;
    std::vector<std::string> shown;
    for (size_t i = 0; i < values->size() && i < kShown; ++i) shown.push_back(CompactJson((*values)[i]));
    if (values->size() > kShown) shown.emplace_back("...");
    return Join(shown, " | ");
  }
  for (std::string_view key : {"anyOf", "oneOf"}) {
    const Value::List* branches = ListAt(target, key);
    if (branches == nullptr) continue;
    std::vector<std::string> labels;
    for (const Value& branch : *branches) {
      if (branch.is_dict()) labels.push_back(TypeLabel(branch.as_dict(), depth + 1));
    }
    return Join(labels, " | ");
  }
  if (DictAt(target, "properties") != nullptr) {
    const std::string* title = StringAt(target, "title");
    return title != nullptr ? *title : "object";
  }
  std::vector<std::string> labels;
  if (const Value* type = target.find("type"); type != nullptr && type->is_string()) {
    labels.push_back(SingleTypeLabel(target, type->as_string(), depth));
  } else if (type != nullptr && type->is_list()) {
    for (const Value& each : type->as_list()) {
      if (each.is_string()) labels.push_back(SingleTypeLabel(target, each.as_string(), depth));
    }
  }
  if (!labels.empty()) return Join(labels, " | ");
  // A $ref that does not resolve still names what was meant.
  if (const std::string* ref = StringAt(target, "$ref")) return ref->substr(ref->rfind('/') + 1);
  return "any";
}

std::string DocsRenderer::SingleTypeLabel(const Value::Dict& schema, std::string_view type, int depth) const {
  if (type == "array") {
    if (const Value::List* prefix = ListAt(schema, "prefixItems")) {
      std::vector<std::string> labels;
      for (const Value& item : *prefix) {
        if (item.is_dict()) labels.push_back(TypeLabel(item.as_dict(), depth + 1));
      }
      return "tuple[" + Join(labels, ", ") + "]";
    }
    const Value::Dict* items = DictAt(schema, "items");
    return items != nullptr ? "list[" + TypeLabel(*items, depth + 1) + "]" : "list";
  }
  if (type == "object") {
    const Value::Dict* values = DictAt(schema, "additionalProperties");
    if (values == nullptr) return "object";
    const Value::Dict* keys = DictAt(schema, "propertyNames");
    const std::string key_label = keys != nullptr ? TypeLabel(*keys, depth + 1) : "str";
    return "dict[" + key_label + ", " + TypeLabel(*values, depth + 1) + "]";
  }
  return std::string(type);
}

// The JSON type an example is made for: the declared one (the first that is
// not "null" of a list), or "object" for a schema with properties.
std::string ExampleType(const Value::Dict& target) {
  std::string type;
  if (const Value* declared = target.find("type"); declared != nullptr && declared->is_string()) {
    type = declared->as_string();
  } else if (declared != nullptr && declared->is_list()) {
    for (const Value& each : declared->as_list()) {
      if (each.is_string() && each.as_string() != "null" && type.empty()) type = each.as_string();
    }
  } else if (DictAt(target, "properties") != nullptr) {
    type = "object";
  }
  return type;
}

// 1 where the bounds allow it (pydantic's gt/ge/le), else the nearest bound.
Value NumberExample(const Value::Dict& target, bool integer) {
  double number = 1;
  const Value* minimum = target.find("minimum");
  const Value* above = target.find("exclusiveMinimum");
  const Value* maximum = target.find("maximum");
  if (minimum != nullptr && minimum->is_number()) {
    number = minimum->as_number();
  } else if (above != nullptr && above->is_number()) {
    number = above->as_number() + 1;
  }
  if (maximum != nullptr && maximum->is_number()) number = std::min(number, maximum->as_number());
  if (!integer) return Value(number);
  constexpr double kLargest = 1e15;  // well inside int64, so the cast is defined
  return Value(static_cast<int64_t>(std::clamp(std::ceil(number), -kLargest, kLargest)));
}

// Defaults where the schema gives them, else the smallest plausible value:
// every field is filled in, optional ones too, so the example shows them all.
Value DocsRenderer::Example(const Value::Dict& schema, int depth) const {
  if (depth > kMaxDepth) return Value();
  if (const Value* fallback = Key(schema, "default")) return *fallback;
  const Value::Dict& target = Target(schema);
  if (IsArrayLeaf(target)) {
    const ArrayLeaf leaf = DescribeArray(target);
    return EncodedArray(leaf.dtype.empty() ? "float64" : leaf.dtype, leaf.example_shape);
  }
  if (const Value* constant = target.find("const")) return *constant;
  for (std::string_view key : {"enum", "examples"}) {
    const Value::List* values = ListAt(target, key);
    if (values != nullptr && !values->empty()) return values->front();
  }
  for (std::string_view key : {"anyOf", "oneOf"}) {
    const Value::List* branches = ListAt(target, key);
    if (branches == nullptr) continue;
    for (const Value& branch : *branches) {
      if (!branch.is_dict()) continue;
      const Value* type = Target(branch.as_dict()).find("type");
      if (type == nullptr || !type->is_string() || type->as_string() != "null") {
        return Example(branch.as_dict(), depth + 1);
      }
    }
    return Value();
  }

  const std::string type = ExampleType(target);
  if (type == "object") return ObjectExample(target, depth);
  if (type == "array") return ArrayExample(target, depth);
  if (type == "integer" || type == "number") return NumberExample(target, type == "integer");
  if (type == "string") return Value("string");
  if (type == "boolean") return Value(false);
  return Value();
}

Value DocsRenderer::ObjectExample(const Value::Dict& target, int depth) const {
  Value::Dict example;
  if (const Value::Dict* props = DictAt(target, "properties")) {
    for (const auto& [name, prop] : *props) {
      example.set(name, prop.is_dict() ? Example(prop.as_dict(), depth + 1) : Value());
    }
  } else if (const Value::Dict* values = DictAt(target, "additionalProperties")) {
    const Value::Dict* keys = DictAt(target, "propertyNames");
    const Value* key = keys != nullptr ? keys->find("const") : nullptr;
    if (key != nullptr && key->is_string()) example.set(key->as_string(), Example(*values, depth + 1));
  }
  return Value(std::move(example));
}

Value DocsRenderer::ArrayExample(const Value::Dict& target, int depth) const {
  Value::List example;
  if (const Value::List* prefix = ListAt(target, "prefixItems")) {
    for (const Value& item : *prefix) {
      example.push_back(item.is_dict() ? Example(item.as_dict(), depth + 1) : Value());
    }
    return Value(std::move(example));
  }
  const Value::Dict* items = DictAt(target, "items");
  if (items == nullptr) return Value(std::move(example));
  // A list of path literals (jac_inputs and the like): all of them, the
  // whole Jacobian, which is also the one choice that is always valid.
  const Value::Dict& item = Target(*items);
  const Value::List* branches = ListAt(item, "anyOf");
  if (branches != nullptr) {
    for (const Value& branch : *branches) {
      const Value* literal = branch.is_dict() ? Target(branch.as_dict()).find("const") : nullptr;
      if (literal != nullptr) example.push_back(*literal);
    }
  } else if (const Value::List* literals = ListAt(item, "enum")) {
    example = *literals;
  }
  if (!example.empty()) return Value(std::move(example));
  const Value* min_items = target.find("minItems");
  const int64_t count =
      min_items != nullptr && min_items->is_int() ? std::max<int64_t>(min_items->as_int(), 1) : 1;
  for (int64_t i = 0; i < count; ++i) example.push_back(Example(*items, depth + 1));
  return Value(std::move(example));
}

Value DocsRenderer::RequestExample(const Value::Dict& schema) const {
  Value example = Example(schema, 0);
  if (!example.is_dict()) return example;
  const std::string* ref = StringAt(schema, "$ref");
  const Value::Dict* concrete = schemas_ != nullptr ? DictAt(*schemas_, kConcreteRequest) : nullptr;
  if (ref != nullptr && *ref == std::string(kRefPrefix).append(kAbstractRequest) && concrete != nullptr) {
    CopyShapes(example, Example(*concrete, 0));
  }
  Value::Dict& body = example.as_dict();
  for (const GradientVector& vector : kGradientVectors) {
    Value* field = body.find(vector.field);
    const Value* keys = body.find(vector.keys_from);
    if (field == nullptr || keys == nullptr || !keys->is_list()) continue;
    const Value::Dict* wrapper = schemas_ != nullptr ? DictAt(*schemas_, vector.shapes_from) : nullptr;
    const Value::Dict* arrays = wrapper != nullptr ? DictAt(*wrapper, "differentiable_arrays") : nullptr;
    Value::Dict filled;
    for (const Value& key : keys->as_list()) {
      if (!key.is_string()) continue;
      const Value::Dict* spec = arrays != nullptr ? DictAt(*arrays, key.as_string()) : nullptr;
      const std::string* dtype = spec != nullptr ? StringAt(*spec, "dtype") : nullptr;
      const Value::List* axes = spec != nullptr ? ListAt(*spec, "shape") : nullptr;
      std::vector<int64_t> shape;
      if (axes != nullptr) {
        for (const Value& axis : *axes) shape.push_back(axis.is_int() ? axis.as_int() : kUnknownAxisExample);
      } else {
        shape = {kAnyRankExampleLength};
      }
      filled.set(key.as_string(), EncodedArray(dtype != nullptr ? *dtype : "float64", shape));
    }
    *field = Value(std::move(filled));
  }
  return example;
}

// ---------------------------------------------------------------- HTML

constexpr std::string_view kStyle = R"css(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--link:#0969da}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.page{max-width:1100px;margin:0 auto;padding:8px 24px 48px}
a{color:var(--link)}
h1{font-size:28px;margin:24px 0 4px}
h2{font-size:19px;margin:16px 0 8px}
h3{font-size:13px;margin:20px 0 6px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.meta,.muted{color:var(--muted)}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{background:var(--soft);border-radius:4px;padding:1px 4px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:12px;overflow:auto;max-height:480px}
pre code{background:none;padding:0}
nav ul{list-style:none;margin:16px 0;padding:0;display:flex;flex-wrap:wrap;gap:8px}
nav a{display:block;border:1px solid var(--line);border-radius:6px;padding:4px 10px;color:inherit;text-decoration:none}
.method{display:inline-block;min-width:48px;margin-right:6px;padding:1px 6px;border-radius:4px;
  color:#fff;background:#8250df;font:700 12px/1.6 system-ui,sans-serif;text-align:center;text-transform:uppercase}
.method.get{background:#1a7f37}.method.post{background:#0969da}
.endpoint{border:1px solid var(--line);border-radius:8px;margin:20px 0;padding:2px 20px 16px}
h2 code{font-size:17px;background:none;padding:0}
.summary{color:var(--muted);font-weight:400;margin-left:10px}
.status{margin:8px 0 4px}.status b{margin-right:6px}
table{width:100%;border-collapse:collapse;font-size:14px}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td p{margin:0 0 4px}td p:last-child{margin:0}
td.name{width:18%}td.type{width:30%}td.req{width:14%}
tr.nested>td{padding:0 0 10px 28px}
tr.nested table{border-left:3px solid var(--line)}
.req b{color:#cf222e;font-weight:600}
dl.supported{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px}
dl.supported dd{margin:0}
)css";

void DocsRenderer::AppendHeader() {
  const Value::Dict* info = DictAt(document_, "info");
  const std::string* title = info != nullptr ? StringAt(*info, "title") : nullptr;
  const std::string* version = info != nullptr ? StringAt(*info, "version") : nullptr;
  const std::string* description = info != nullptr ? StringAt(*info, "description") : nullptr;
  const std::string name = title != nullptr ? *title : "Tesseract";

  out_ += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out_ += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>";
  AppendEscaped(out_, name);
  out_ += " - API docs</title><style>";
  out_ += kStyle;
  out_ += "</style></head>\n<body><div class=\"page\">\n<header><h1>";
  AppendEscaped(out_, name);
  out_ += "</h1><p class=\"meta\">";
  if (version != nullptr) {
    out_ += "Version <code>";
    AppendEscaped(out_, *version);
    out_ += "</code> &middot; ";
  }
  // Relative, so it resolves next to /docs wherever the server is mounted.
  out_ += "<a href=\"openapi.json\">openapi.json</a></p>";
  if (description != nullptr) AppendProse(out_, *description);
  out_ += "</header>\n";
}

void DocsRenderer::AppendNav(const std::vector<Operation>& operations) {
  out_ += "<nav><ul>";
  for (const Operation& operation : operations) {
    out_ += "<li><a href=\"#" + Anchor(operation.method, *operation.path) + "\"><span class=\"method " +
            std::string(operation.method) + "\">" + std::string(operation.method) + "</span>";
    AppendEscaped(out_, *operation.path);
    out_ += "</a></li>";
  }
  out_ += "</ul></nav>\n";
}

void DocsRenderer::AppendParameters(const Value::List& parameters) {
  out_ += "<h3>Parameters</h3><table><tbody>";
  for (const Value& parameter : parameters) {
    if (!parameter.is_dict()) continue;
    const Value::Dict& p = parameter.as_dict();
    const std::string* name = StringAt(p, "name");
    const std::string* where = StringAt(p, "in");
    const Value* required = p.find("required");
    out_ += "<tr><td class=\"name\"><code>";
    AppendEscaped(out_, name != nullptr ? *name : "");
    out_ += "</code></td><td class=\"type\"><code>";
    const Value::Dict* schema = DictAt(p, "schema");
    AppendEscaped(out_, schema != nullptr ? TypeLabel(*schema, 0) : "any");
    out_ += "</code></td><td class=\"req\">";
    AppendEscaped(out_, where != nullptr ? *where : "");
    out_ += required != nullptr && required->is_bool() && required->as_bool() ? ", <b>required</b>"
                                                                              : ", optional";
    out_ += "</td><td>";
    if (const std::string* description = StringAt(p, "description")) AppendProse(out_, *description);
    out_ += "</td></tr>";
  }
  out_ += "</tbody></table>\n";
}

void DocsRenderer::AppendFieldTable(const Value::Dict& model, int depth) {
  expanding_.push_back(&model);
  std::vector<std::string_view> required;
  if (const Value::List* names = ListAt(model, "required")) {
    for (const Value& name : *names) {
      if (name.is_string()) required.push_back(name.as_string());
    }
  }
  out_ +=
      "<table><thead><tr><th>Field</th><th>Type</th><th>Required / default</th><th>Description</th></tr>"
      "</thead><tbody>";
  static const Value::Dict kAny;
  for (const auto& [name, prop] : *DictAt(model, "properties")) {
    const Value::Dict& field = prop.is_dict() ? prop.as_dict() : kAny;
    out_ += "<tr><td class=\"name\"><code>";
    AppendEscaped(out_, name);
    out_ += "</code></td><td class=\"type\"><code>";
    AppendEscaped(out_, TypeLabel(field, depth));
    out_ += "</code></td><td class=\"req\">";
    if (std::find(required.begin(), required.end(), name) != required.end()) {
      out_ += "<b>required</b>";
    } else if (const Value* fallback = Key(field, "default")) {
      out_ += "default <code>";
      std::string json;
      AppendInlineJson(json, *fallback);
      AppendEscaped(out_, json);
      out_ += "</code>";
    } else {
      out_ += "<span class=\"muted\">optional</span>";
    }
    out_ += "</td><td>";
    if (const Value* description = Key(field, "description");
        description != nullptr && description->is_string()) {
      AppendProse(out_, description->as_string());
    }
    out_ += "</td></tr>";
    const Value::Dict* nested = ExpandableModel(field, depth);
    if (nested != nullptr && depth < kMaxDepth &&
        std::find(expanding_.begin(), expanding_.end(), nested) == expanding_.end()) {
      out_ += "<tr class=\"nested\"><td colspan=\"4\">";
      AppendFieldTable(*nested, depth + 1);
      out_ += "</td></tr>";
    }
  }
  out_ += "</tbody></table>";
  expanding_.pop_back();
}

// A request or response body: its description, then a field table for a model
// or a type line for anything else (the gradient outputs are nested dicts).
void DocsRenderer::AppendSchema(const Value::Dict& schema) {
  if (const Value* description = Key(schema, "description");
      description != nullptr && description->is_string()) {
    AppendProse(out_, description->as_string());
  }
  const Value::Dict& target = Target(schema);
  if (DictAt(target, "properties") != nullptr && !IsArrayLeaf(target) && !IsShapeDType(target)) {
    AppendFieldTable(target, 0);
  } else {
    out_ += "<p>Type: <code>";
    AppendEscaped(out_, TypeLabel(schema, 0));
    out_ += "</code></p>";
  }
  out_ += "\n";
}

// The schema of a requestBody or response: its JSON content, else the first.
const Value::Dict* BodySchema(const Value::Dict& body) {
  const Value::Dict* content = DictAt(body, "content");
  if (content == nullptr || content->empty()) return nullptr;
  const Value::Dict* media = DictAt(*content, "application/json");
  if (media == nullptr) media = DictAt(*content, content->begin()->first);
  return media != nullptr ? DictAt(*media, "schema") : nullptr;
}

void DocsRenderer::AppendOperation(const Operation& operation) {
  const std::string anchor = Anchor(operation.method, *operation.path);
  const Value::Dict& op = *operation.op;
  out_ += "<section class=\"endpoint\" id=\"" + anchor + "\"><h2><span class=\"method " +
          std::string(operation.method) + "\">" + std::string(operation.method) + "</span><code>";
  AppendEscaped(out_, *operation.path);
  out_ += "</code>";
  if (const std::string* summary = StringAt(op, "summary")) {
    out_ += "<span class=\"summary\">";
    AppendEscaped(out_, *summary);
    out_ += "</span>";
  }
  out_ += "</h2>\n";
  if (const std::string* description = StringAt(op, "description")) AppendProse(out_, *description);

  if (const Value::List* parameters = ListAt(op, "parameters");
      parameters != nullptr && !parameters->empty()) {
    AppendParameters(*parameters);
  }
  const Value::Dict* body = DictAt(op, "requestBody");
  const Value::Dict* body_schema = body != nullptr ? BodySchema(*body) : nullptr;
  if (body_schema != nullptr) {
    out_ += "<h3>Request body</h3>";
    AppendSchema(*body_schema);
    out_ += "<h3>Example request</h3><pre class=\"example\" id=\"example-" + anchor + "\"><code>";
    std::string json;
    AppendPrettyJson(json, RequestExample(*body_schema), 0);
    AppendEscaped(out_, json);
    out_ += "</code></pre>\n";
  }

  if (const Value::Dict* responses = DictAt(op, "responses")) {
    out_ += "<h3>Responses</h3>";
    for (const auto& [status, response] : *responses) {
      if (!response.is_dict()) continue;
      const std::string* description = StringAt(response.as_dict(), "description");
      const Value::Dict* schema = BodySchema(response.as_dict());
      out_ += "<p class=\"status\"><b>";
      AppendEscaped(out_, status);
      out_ += "</b>";
      AppendEscaped(out_, description != nullptr ? *description : "");
      // Error bodies are the same everywhere (FastAPI's validation error):
      // named, not tabulated.
      if (schema != nullptr && !status.starts_with('2')) {
        out_ += ": <code>";
        AppendEscaped(out_, TypeLabel(*schema, 0));
        out_ += "</code>";
      }
      out_ += "</p>";
      if (schema != nullptr && status.starts_with('2')) AppendSchema(*schema);
    }
  }
  out_ += "</section>\n";
}

// The x-supported-* lists, labelled from their keys: "x-supported-gpu-transports"
// reads "GPU transports".
void DocsRenderer::AppendSupported() {
  constexpr std::string_view kPrefix = "x-supported-";
  std::string rows;
  for (const auto& [key, value] : document_) {
    if (!key.starts_with(kPrefix) || !value.is_list()) continue;
    std::string label = key.substr(kPrefix.size());
    if (label.starts_with("gpu-")) label.replace(0, 3, "GPU");
    for (char& c : label) c = c == '-' ? ' ' : c;
    if (!label.empty()) label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
    rows += "<dt>";
    AppendEscaped(rows, label);
    rows += "</dt><dd>";
    for (const Value& item : value.as_list()) {
      rows += "<code>";
      AppendEscaped(rows, item.is_string() ? item.as_string() : CompactJson(item));
      rows += "</code> ";
    }
    rows += "</dd>";
  }
  if (rows.empty()) return;
  out_ += "<section id=\"supported\"><h2>Supported by this server</h2><dl class=\"supported\">" + rows +
          "</dl></section>\n";
}

std::string DocsRenderer::Render() {
  std::vector<Operation> operations;
  if (const Value::Dict* paths = DictAt(document_, "paths")) {
    for (const auto& [path, item] : *paths) {
      if (!item.is_dict()) continue;
      for (const auto& [method, op] : item.as_dict()) {
        const auto known = std::find(kMethods.begin(), kMethods.end(), method);
        if (known != kMethods.end() && op.is_dict()) operations.push_back({*known, &path, &op.as_dict()});
      }
    }
  }
  AppendHeader();
  AppendNav(operations);
  out_ += "<main>\n";
  for (const Operation& operation : operations) AppendOperation(operation);
  AppendSupported();
  out_ += "</main>\n</div></body></html>\n";
  return std::move(out_);
}

}  // namespace

std::string RenderDocsPage(const Value& openapi) {
  static const Value::Dict kEmpty;
  return DocsRenderer(openapi.is_dict() ? openapi.as_dict() : kEmpty).Render();
}

}  // namespace tesscpp::runtime
