// json_reader.cc: JSON -> Value over simdjson On-Demand, decoding arrays on the way.
//
// The body is parsed where it lies (a padded pooled buffer). When an object is an
// arraydict (see ArrayDetection), its data.buffer string is not copied: the raw
// bytes between the quotes are handed to the base64 decoder, which writes the
// tensor directly. simdjson's string unescaping would cost a copy at ~3 GB/s
// against 6 GB/s for locating the string. Base64 never holds
// escapes; if a peer escapes characters anyway, decoding fails on the backslash
// and is retried once with the unescaped text.
//
// On-Demand is forward-only, so object fields are handled in document order and
// the decision "is this an array" is taken when the object ends.
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "codec/array_codec.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/internal/core/path.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp {
namespace {

namespace od = simdjson::ondemand;

Status JsonError(simdjson::error_code error, std::string_view what = "invalid JSON") {
  if (error == simdjson::DEPTH_ERROR) return Status::DecodeError("JSON nesting is too deep");
  return Status::DecodeError(what, ": ", simdjson::error_message(error));
}

// The token of a value, for both a nested value and a scalar document (whose
// accessor can fail; an empty token then fails the number check).
std::string_view RawToken(od::value& v) { return v.raw_json_token(); }
std::string_view RawToken(od::document& doc) {
  std::string_view token;
  if (doc.raw_json_token().get(token)) return {};
  return token;
}

// JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - start;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == t.size();
}

// Object keys that are identifiers print as fields ("a.b"), others as dict keys
// ("a.{two words}"): the reader does not know the schema, and this reads best.
PathSegment KeySegment(std::string_view key) {
  auto as_field = Path::Parse(key);
  if (as_field.ok() && as_field->segments().size() == 1 &&
      as_field->segments()[0].kind == PathSegment::Kind::kField) {
    return PathSegment::Field(std::string(key));
  }
  return PathSegment::Key(std::string(key));
}

// The "data" object of a candidate arraydict, with its buffer string kept raw.
struct PendingData {
  // Every field in document order; a string buffer is held as a null placeholder
  // and its raw text kept in `buffer`.
  Value::Dict fields;
  std::optional<std::string_view> buffer;  // raw text between the quotes
  // A list buffer parsed straight into compact leaves (only once shape and dtype
  // were seen, i.e. the object is almost surely an array).
  std::optional<codec::JsonLeaves> leaves;
  bool extra_keys = false;  // keys other than buffer/encoding/compression
};

class Reader {
 public:
  explicit Reader(const JsonReadOptions& options) : options_(options) {}

  template <typename V>
  Result<Value> ParseAny(V& v, int depth);

  // Where an error happened, innermost segment first.
  std::vector<PathSegment> error_path;

 private:
  Result<Value> ParseObject(od::object object, int depth);
  Result<Value> ParseArray(od::array array, int depth);
  Result<PendingData> ParseData(od::object object, int depth, bool buffer_as_leaves);
  Status ParseLeaves(od::array array, codec::JsonLeavesBuilder& builder, int depth);
  Result<Value> FinishObject(Value::Dict dict, std::optional<PendingData> pending);
  Result<Tensor> DecodePending(const Value::Dict& dict, const PendingData& pending);

  template <typename V>
  Result<Value> ParseNumber(V& v);
  template <typename V>
  Result<double> OutOfRangeNumber(V& v);

  Status CheckDepth(int depth) const {
    if (depth <= options_.max_depth) return Status::OK();
    return Status::DecodeError("JSON nesting is deeper than ", options_.max_depth, " levels");
  }

  const JsonReadOptions& options_;
};

template <typename V>
Result<Value> Reader::ParseAny(V& v, int depth) {
  TESS_RETURN_IF_ERROR(CheckDepth(depth));
  od::json_type type;
  if (auto error = v.type().get(type)) return JsonError(error);
  switch (type) {
    case od::json_type::object: {
      od::object object;
      if (auto error = v.get_object().get(object)) return JsonError(error);
      return ParseObject(object, depth);
    }
    case od::json_type::array: {
      od::array array;
      if (auto error = v.get_array().get(array)) return JsonError(error);
      return ParseArray(array, depth);
    }
    case od::json_type::string: {
      std::string_view s;
      if (auto error = v.get_string().get(s)) return JsonError(error, "invalid JSON string");
      return Value(s);
    }
    case od::json_type::number: return ParseNumber(v);
    case od::json_type::boolean: {
      bool b;
      if (auto error = v.get_bool().get(b)) return JsonError(error);
      return Value(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (auto error = v.is_null().get(is_null); error || !is_null) {
        return Status::DecodeError("invalid JSON: bad literal");
      }
      return Value();
    }
  }
  return Status::DecodeError("invalid JSON value");
}

template <typename V>
Result<Value> Reader::ParseNumber(V& v) {
  od::number number;
  if (auto error = v.get_number().get(number); !error) {
    switch (number.get_number_type()) {
      case od::number_type::signed_integer: return Value(number.get_int64());
      case od::number_type::unsigned_integer: return Value(number.get_uint64());
      default: return Value(number.get_double());
    }
  }
  TESS_ASSIGN_OR_RETURN(double d, OutOfRangeNumber(v));
  return Value(d);
}

template <typename V>
Result<double> Reader::OutOfRangeNumber(V& v) {
  // simdjson refuses integers beyond 64 bits and numbers beyond the double
  // range; Python reads them (an exact int, or inf for 1e400). The nearest
  // double is the closest we can carry, for any token that is a valid number.
  std::string_view token = RawToken(v);
  while (!token.empty() &&
         (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (!IsJsonNumber(token)) return Status::DecodeError("invalid JSON number '", token, "'");
  if (options_.exact_numbers) return Status::OutOfRange("the number ", token, " has no exact 64-bit value");
  return std::strtod(std::string(token).c_str(), nullptr);
}

Result<Value> Reader::ParseArray(od::array array, int depth) {
  Value::List list;
  int64_t index = 0;
  for (auto element : array) {
    od::value value;
    if (auto error = element.get(value)) return JsonError(error);
    auto child = ParseAny(value, depth + 1);
    if (!child.ok()) {
      error_path.push_back(PathSegment::Index(index));
      return child.status();
    }
    list.push_back(std::move(*child));
    ++index;
  }
  return Value(std::move(list));
}

Result<Value> Reader::ParseObject(od::object object, int depth) {
  Value::Dict dict;
  std::optional<PendingData> pending;
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return JsonError(error);
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return JsonError(error, "invalid JSON object key");
    od::value value = field.value();
    if (options_.arrays != ArrayDetection::kNone && key == "data") {
      od::json_type type;
      if (auto error = value.type().get(type)) return JsonError(error);
      if (type == od::json_type::object) {
        od::object data_object;
        if (auto error = value.get_object().get(data_object)) return JsonError(error);
        // The reference and its SDK write shape and dtype before data; then a
        // list buffer goes straight into compact leaves instead of a Value tree.
        const bool as_leaves = dict.contains("shape") && dict.contains("dtype");
        auto data = ParseData(data_object, depth + 1, as_leaves);
        if (!data.ok()) {
          if (as_leaves && GetValidationDetail(data.status()) != nullptr) {
            return data.status();  // a bad json buffer: an issue of the array itself
          }
          error_path.push_back(PathSegment::Field("data"));
          return data.status();
        }
        pending = std::move(*data);
        dict.set("data", Value());  // keeps the key's position; filled in if not an array
        continue;
      }
    }
    auto child = ParseAny(value, depth + 1);
    if (!child.ok()) {
      error_path.push_back(KeySegment(key));
      return child.status();
    }
    dict.set(std::string(key), std::move(*child));
  }
  return FinishObject(std::move(dict), std::move(pending));
}

Status Reader::ParseLeaves(od::array array, codec::JsonLeavesBuilder& builder, int depth) {
  TESS_RETURN_IF_ERROR(CheckDepth(depth));
  builder.BeginList();
  int64_t count = 0;
  for (auto element : array) {
    od::value value;
    if (auto error = element.get(value)) return JsonError(error);
    od::json_type type;
    if (auto error = value.type().get(type)) return JsonError(error);
    switch (type) {
      case od::json_type::array: {
        od::array inner;
        if (auto error = value.get_array().get(inner)) return JsonError(error);
        TESS_RETURN_IF_ERROR(ParseLeaves(inner, builder, depth + 1));
        break;
      }
      case od::json_type::number: {  // the hot path of json-encoded arrays: no Value
        od::number number;
        if (value.get_number().get(number)) {
          TESS_ASSIGN_OR_RETURN(double d, OutOfRangeNumber(value));
          TESS_RETURN_IF_ERROR(builder.AddDouble(d));
          break;
        }
        switch (number.get_number_type()) {
          case od::number_type::signed_integer:
            TESS_RETURN_IF_ERROR(builder.AddInt(number.get_int64()));
            break;
          case od::number_type::unsigned_integer:
            TESS_RETURN_IF_ERROR(builder.AddUInt(number.get_uint64()));
            break;
          default: TESS_RETURN_IF_ERROR(builder.AddDouble(number.get_double()));
        }
        break;
      }
      default: {
        TESS_ASSIGN_OR_RETURN(Value leaf, ParseAny(value, depth + 1));
        if (leaf.is_bool()) {
          TESS_RETURN_IF_ERROR(builder.AddBool(leaf.as_bool()));
        } else if (leaf.is_null()) {
          TESS_RETURN_IF_ERROR(builder.AddNull());
        } else if (leaf.is_string()) {
          TESS_RETURN_IF_ERROR(builder.AddString(leaf.as_string()));
        } else {
          return Status::ValidationError("could not parse value as a numeric array (contains ",
                                         Value::KindName(leaf.kind()), " data)");  // typed by the caller
        }
      }
    }
    ++count;
  }
  return builder.EndList(count);
}

Result<PendingData> Reader::ParseData(od::object object, int depth, bool buffer_as_leaves) {
  PendingData data;
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return JsonError(error);
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return JsonError(error, "invalid JSON object key");
    od::value value = field.value();
    if (key == "buffer") {
      od::json_type type;
      if (auto error = value.type().get(type)) return JsonError(error);
      if (type == od::json_type::string) {
        // The token starts at the opening quote and may carry trailing spaces.
        std::string_view token = value.raw_json_token();
        const size_t close = token.rfind('"');
        if (close == 0 || close == std::string_view::npos) return Status::DecodeError("invalid JSON string");
        data.buffer = token.substr(1, close - 1);
        data.fields.set("buffer", Value());
        continue;
      }
      if (type == od::json_type::array && buffer_as_leaves) {
        od::array array;
        if (auto error = value.get_array().get(array)) return JsonError(error);
        codec::JsonLeavesBuilder builder;
        Status parsed = ParseLeaves(array, builder, depth + 1);
        if (!parsed.ok()) {
          // Untyped decode errors are the document's own (syntax, nesting depth).
          if (parsed.code() == StatusCode::kDecodeError && GetValidationDetail(parsed) == nullptr) {
            error_path.push_back(PathSegment::Field("buffer"));
            return parsed;
          }
          return codec::JsonBufferFailure(parsed).WithContext("data.buffer");
        }
        data.leaves = builder.Finish();
        data.fields.set("buffer", Value());
        continue;
      }
    }
    if (key != "buffer" && key != "encoding" && key != "compression") data.extra_keys = true;
    auto child = ParseAny(value, depth + 1);
    if (!child.ok()) {
      error_path.push_back(KeySegment(key));
      return child.status();
    }
    data.fields.set(std::string(key), std::move(*child));
  }
  return data;
}

// Unescapes a raw JSON string body by parsing it as a one-string document.
Result<std::string> Unescape(std::string_view raw) {
  std::string quoted;
  quoted.reserve(raw.size() + 2 + simdjson::SIMDJSON_PADDING);
  quoted += '"';
  quoted += raw;
  quoted += '"';
  od::parser parser;
  simdjson::padded_string padded(quoted);
  od::document doc;
  if (auto error = parser.iterate(padded).get(doc)) return JsonError(error);
  std::string_view s;
  if (auto error = doc.get_string().get(s)) return JsonError(error, "invalid JSON string");
  return std::string(s);
}

bool IsArrayKey(std::string_view key) {
  return key == "object_type" || key == "shape" || key == "dtype" || key == "data";
}

Result<Value> Reader::FinishObject(Value::Dict dict, std::optional<PendingData> pending) {
  if (pending) {
    const Value* object_type = dict.find("object_type");
    const bool tagged =
        object_type != nullptr && object_type->is_string() && object_type->as_string() == "array";
    bool is_array = false;
    if (options_.arrays == ArrayDetection::kTagged) {
      is_array = tagged;  // the SDK decodes any dict tagged so, ignoring other keys
    } else {
      // kShaped: only shape/dtype/data (+ object_type), and data must name a
      // known encoding: a host one, or one the GPU transports read.
      bool only_array_keys = true;
      for (const auto& [key, value] : dict) only_array_keys = only_array_keys && IsArrayKey(key);
      const Value* encoding = pending->fields.find("encoding");
      const DeviceArrayReader* device = options_.array_options.device_arrays;
      is_array = only_array_keys && (object_type == nullptr || tagged) && dict.contains("shape") &&
                 dict.contains("dtype") && encoding != nullptr && encoding->is_string() &&
                 (ArrayEncodingFromName(encoding->as_string()).ok() ||
                  (device != nullptr && device->Reads(encoding->as_string())));
    }
    if (is_array) {
      TESS_ASSIGN_OR_RETURN(Tensor tensor, DecodePending(dict, *pending));
      return Value(std::move(tensor));
    }
    // Not an array after all: "data" becomes a plain dict.
    if (pending->buffer) {
      TESS_ASSIGN_OR_RETURN(std::string text, Unescape(*pending->buffer));
      pending->fields.set("buffer", Value(std::move(text)));
    } else if (pending->leaves) {
      pending->fields.set("buffer", codec::JsonLeavesToValue(*pending->leaves));
    }
    dict.set("data", Value(std::move(pending->fields)));
  }
  return Value(std::move(dict));
}

Result<Tensor> Reader::DecodePending(const Value::Dict& dict, const PendingData& pending) {
  if (pending.extra_keys && options_.arrays == ArrayDetection::kShaped) {
    for (const auto& [key, value] : pending.fields) {
      if (key != "encoding" && key != "compression" && key != "buffer") {
        return codec::NonNumericArray(
            Status::ValidationError("data.", key, ": extra fields are not permitted"));
      }
    }
  }
  codec::ArrayFields fields;
  fields.shape = dict.find("shape");
  fields.dtype = dict.find("dtype");
  fields.encoding = pending.fields.find("encoding");
  fields.compression = pending.fields.find("compression");
  fields.buffer_text = pending.buffer;
  if (pending.leaves) fields.buffer_leaves = &*pending.leaves;
  if (!pending.buffer && !pending.leaves) fields.buffer_value = pending.fields.find("buffer");
  auto tensor = codec::DecodeArrayFields(fields, options_.array_options);
  if (tensor.ok() || !pending.buffer || pending.buffer->find('\\') == std::string_view::npos) {
    return tensor;
  }
  // The peer escaped characters inside the buffer string: decode the plain text.
  TESS_ASSIGN_OR_RETURN(std::string text, Unescape(*pending.buffer));
  fields.buffer_text = text;
  return codec::DecodeArrayFields(fields, options_.array_options);
}

Result<Value> Parse(const simdjson::padded_string_view& json, const JsonReadOptions& options) {
  if (json.length() >= simdjson::SIMDJSON_MAXSIZE_BYTES) {
    return Status::PayloadTooLarge("JSON documents must be smaller than 4 GiB (got ", json.length(),
                                   " bytes)");
  }
  // One parser per thread: its index buffers are reused across documents.
  thread_local od::parser parser;
  od::document doc;
  if (auto error = parser.iterate(json).get(doc)) return JsonError(error);
  od::json_type root_type;
  if (auto error = doc.type().get(root_type)) return JsonError(error);
  const bool root_is_container = root_type == od::json_type::object || root_type == od::json_type::array;
  Reader reader(options);
  auto value = reader.ParseAny(doc, 0);
  if (!value.ok()) {
    Status status = value.status();
    if (!reader.error_path.empty()) {
      // Issues of arrays decoded on the way get a pydantic loc; other errors a path.
      std::vector<PathSegment> segments(reader.error_path.rbegin(), reader.error_path.rend());
      if (GetValidationDetail(status) != nullptr) {
        std::vector<Value> loc;
        loc.reserve(segments.size());
        for (const PathSegment& s : segments) {
          loc.push_back(s.kind == PathSegment::Kind::kIndex ? Value(s.index) : Value(s.name));
        }
        return PrefixLocation(status, loc);
      }
      status = status.WithContext(Path(std::move(segments)).ToString());
    }
    return status;
  }
  // Anything left after a root object or array ("[1] 2") means the body was not
  // one document. (simdjson checks this itself for a root scalar.)
  const char* rest = nullptr;
  if (root_is_container && !doc.current_location().get(rest)) {
    return Status::DecodeError("invalid JSON: unexpected content after the document (near byte ",
                               rest - json.data(), ")");
  }
  return value;
}

}  // namespace

Result<Value> ReadJson(const Buffer& document, const JsonReadOptions& options) {
  if (!document.padded()) return ReadJson(document.string_view(), options);
  return Parse(simdjson::padded_string_view(reinterpret_cast<const char*>(document.data()),
                                            static_cast<size_t>(document.size()),
                                            static_cast<size_t>(document.size() + document.readable_tail())),
               options);
}

Result<Value> ReadJson(std::string_view document, const JsonReadOptions& options) {
  BufferPool* pool =
      options.array_options.pool != nullptr ? options.array_options.pool : BufferPool::Default();
  TESS_ASSIGN_OR_RETURN(Buffer copy, pool->Allocate(static_cast<int64_t>(document.size())));
  if (!document.empty()) std::memcpy(copy.data(), document.data(), document.size());
  return ReadJson(copy, options);
}

}  // namespace tesscpp
