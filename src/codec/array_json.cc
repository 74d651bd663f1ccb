// json_array.cc: the "json" array encoding, nested lists <-> tensor.
//
// Decoding follows what the reference does with a json buffer:
// np.asarray(buffer).reshape(shape), then a checked cast to the dtype that
// refuses to lose values (tesseract_core's _astype_checked): fractional floats
// into integers, integers outside the target's range, and finite floats that
// overflow to inf are errors. Encoding writes arr.tolist() the way orjson prints
// it (floats widened to double, NaN and Inf as null, complex as pydantic's
// strings such as "1+2j").
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "codec/array_codec.h"
#include "codec/number_format.h"
#include "core/float16.h"

namespace tesscpp::codec {

Status JsonLeavesBuilder::Ragged(int depth) {
  // NumPy's words, which the reference passes on as a pydantic value_error.
  Status cause = Status::DecodeError(
      "setting an array element with a sequence. The requested array has an "
      "inhomogeneous shape after ",
      depth, " dimensions.");
  return WithArrayIssue(cause, "value_error", Value::Dict{{"error", Value::Dict{}}},
                        "Value error, " + cause.message());
}

Status JsonLeavesBuilder::EndList(int64_t count) {
  --depth_;  // now the list's own depth (the outermost list has depth 0)
  if (leaf_depth_ >= 0 && depth_ >= leaf_depth_) return Ragged(leaf_depth_);
  // Inner lists close first, so depths fill in any order; -1 marks "not seen yet".
  auto& dims = leaves_.dims;
  const auto d = static_cast<size_t>(depth_);
  if (dims.size() <= d) dims.resize(d + 1, -1);
  if (dims[d] == -1) {
    dims[d] = count;  // the first list closed at this depth fixes its length
  } else if (dims[d] != count) {
    return Ragged(depth_);
  }
  return Status::OK();
}

Status JsonLeavesBuilder::AddLeaf(JsonLeaves::Kind kind, uint64_t bits) {
  if (leaf_depth_ < 0) leaf_depth_ = depth_;
  // Leaves all sit at one depth, below every list.
  if (depth_ != leaf_depth_ || static_cast<size_t>(depth_) < leaves_.dims.size()) {
    return Ragged(std::min(depth_, leaf_depth_));
  }
  leaves_.kinds.push_back(kind);
  leaves_.bits.push_back(bits);
  return Status::OK();
}

Status JsonLeavesBuilder::AddDouble(double d) {
  return AddLeaf(JsonLeaves::kFloat, std::bit_cast<uint64_t>(d));
}

Status JsonLeavesBuilder::AddString(std::string s) {
  leaves_.strings.push_back(std::move(s));
  return AddLeaf(JsonLeaves::kString, leaves_.strings.size() - 1);
}

namespace {

Status NonNumeric(Value::Kind kind) {
  return NonNumericArray(Status::ValidationError("could not parse value as a numeric array (contains ",
                                                 Value::KindName(kind), " data)"));
}

Status AddValue(const Value& v, JsonLeavesBuilder& b) {
  switch (v.kind()) {
    case Value::Kind::kList: {
      b.BeginList();
      for (const Value& item : v.as_list()) TESS_RETURN_IF_ERROR(AddValue(item, b));
      return b.EndList(static_cast<int64_t>(v.as_list().size()));
    }
    case Value::Kind::kBool: return b.AddBool(v.as_bool());
    case Value::Kind::kInt: return v.is_big_uint() ? b.AddUInt(v.as_uint()) : b.AddInt(v.as_int());
    case Value::Kind::kFloat: return b.AddDouble(v.as_number());
    case Value::Kind::kNull: return b.AddNull();
    case Value::Kind::kString: return b.AddString(v.as_string());
    default: return NonNumeric(v.kind());
  }
}

// What np.asarray would infer for the leaves, from narrowest to widest.
enum class SourceKind { kBool, kInt, kUInt64, kFloat, kString };

struct Summary {
  bool any_float = false, any_int = false, any_big_uint = false, any_negative = false;
  bool any_null = false, any_string = false;

  explicit Summary(const JsonLeaves& leaves) {
    for (size_t i = 0; i < leaves.kinds.size(); ++i) {
      switch (leaves.kinds[i]) {
        case JsonLeaves::kInt:
          any_int = true;
          any_negative = any_negative || static_cast<int64_t>(leaves.bits[i]) < 0;
          break;
        case JsonLeaves::kUInt: any_int = any_big_uint = true; break;
        case JsonLeaves::kFloat: any_float = true; break;
        case JsonLeaves::kNull: any_null = true; break;
        case JsonLeaves::kString: any_string = true; break;
        default: break;
      }
    }
  }

  SourceKind kind() const {
    if (any_string) return SourceKind::kString;
    if (any_float || any_null) return SourceKind::kFloat;
    if (any_big_uint) return any_negative ? SourceKind::kFloat : SourceKind::kUInt64;
    return any_int ? SourceKind::kInt : SourceKind::kBool;
  }
};

double AsDouble(const JsonLeaves& l, size_t i) {
  const uint64_t bits = l.bits[i];
  switch (l.kinds[i]) {
    case JsonLeaves::kBool: return static_cast<double>(bits);
    case JsonLeaves::kInt: return static_cast<double>(static_cast<int64_t>(bits));
    case JsonLeaves::kUInt: return static_cast<double>(bits);
    case JsonLeaves::kFloat: return std::bit_cast<double>(bits);
    default: return std::numeric_limits<double>::quiet_NaN();  // null
  }
}

std::string ShowNumber(double v) {
  std::string s;
  AppendJsonDouble(v, s);
  return s;
}

template <typename T>
void Store(uint8_t* data, size_t i, T value) {
  std::memcpy(data + i * sizeof(T), &value, sizeof(T));
}

// Integers: check fractions (float sources) and the range, then store.
template <typename T>
Status ToInteger(const JsonLeaves& l, SourceKind kind, Dtype dtype, uint8_t* data) {
  const size_t n = l.kinds.size();
  if (n == 0) return Status::OK();
  if (kind == SourceKind::kFloat) {
    double low = INFINITY, high = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
      const double d = AsDouble(l, i);
      if (!std::isfinite(d) || d != std::floor(d)) {
        return WithArrayIssue(
            Status::ValidationError("Expected integer data, but array contains floating point values"),
            "array_expected_integer");
      }
      low = std::min(low, d);
      high = std::max(high, d);
    }
    // Bounds as exactly representable doubles: [lo, hi_exclusive).
    if (low < static_cast<double>(std::numeric_limits<T>::min()))
      return ValueOutOfRange(dtype, ShowNumber(low));
    if (high >= std::ldexp(1.0, std::numeric_limits<T>::digits))
      return ValueOutOfRange(dtype, ShowNumber(high));
    for (size_t i = 0; i < n; ++i) {
      // Integer leaves convert exactly; float leaves are integral and in range.
      const uint64_t b = l.bits[i];
      switch (l.kinds[i]) {
        case JsonLeaves::kFloat: Store<T>(data, i, static_cast<T>(std::bit_cast<double>(b))); break;
        case JsonLeaves::kInt: Store<T>(data, i, static_cast<T>(static_cast<int64_t>(b))); break;
        default: Store<T>(data, i, static_cast<T>(b)); break;
      }
    }
    return Status::OK();
  }
  if (kind == SourceKind::kUInt64) {  // every leaf is non-negative
    uint64_t high = 0;
    for (size_t i = 0; i < n; ++i) high = std::max(high, l.bits[i]);
    if (high > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      return ValueOutOfRange(dtype, std::to_string(high));
    for (size_t i = 0; i < n; ++i) Store<T>(data, i, static_cast<T>(l.bits[i]));
    return Status::OK();
  }
  int64_t low = std::numeric_limits<int64_t>::max(), high = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < n; ++i) {
    low = std::min(low, static_cast<int64_t>(l.bits[i]));
    high = std::max(high, static_cast<int64_t>(l.bits[i]));
  }
  if (std::is_unsigned_v<T> ? low < 0 : low < static_cast<int64_t>(std::numeric_limits<T>::min())) {
    return ValueOutOfRange(dtype, std::to_string(low));
  }
  if (high > 0 && static_cast<uint64_t>(high) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return ValueOutOfRange(dtype, std::to_string(high));
  }
  for (size_t i = 0; i < n; ++i) Store<T>(data, i, static_cast<T>(static_cast<int64_t>(l.bits[i])));
  return Status::OK();
}

// A finite value that became infinite was too large for the target.
Status CheckOverflow(double before, double after, Dtype dtype) {
  if (std::isfinite(before) && !std::isfinite(after)) return ValueOutOfRange(dtype, ShowNumber(before));
  return Status::OK();
}

Status ToFloating(const JsonLeaves& l, Dtype dtype, uint8_t* data) {
  for (size_t i = 0; i < l.kinds.size(); ++i) {
    const double d = AsDouble(l, i);
    switch (dtype) {
      case Dtype::kFloat16: {
        const uint16_t h = core::DoubleToHalf(d);
        TESS_RETURN_IF_ERROR(CheckOverflow(d, core::HalfToFloat(h), dtype));
        Store<uint16_t>(data, i, h);
        break;
      }
      case Dtype::kFloat32: {
        const auto f = static_cast<float>(d);
        TESS_RETURN_IF_ERROR(CheckOverflow(d, f, dtype));
        Store<float>(data, i, f);
        break;
      }
      default: Store<double>(data, i, d); break;
    }
  }
  return Status::OK();
}

Status ToComplex(const JsonLeaves& l, Dtype dtype, uint8_t* data) {
  for (size_t i = 0; i < l.kinds.size(); ++i) {
    std::complex<double> c(AsDouble(l, i), 0.0);
    if (l.kinds[i] == JsonLeaves::kString) {
      const std::string& text = l.strings[l.bits[i]];
      if (!ParseComplex(text, &c)) {
        return NonNumericArray(
            Status::ValidationError("could not convert string '", text, "' to a complex number"));
      }
    }
    if (dtype == Dtype::kComplex128) {
      Store<std::complex<double>>(data, i, c);
      continue;
    }
    const std::complex<float> f(static_cast<float>(c.real()), static_cast<float>(c.imag()));
    TESS_RETURN_IF_ERROR(CheckOverflow(c.real(), f.real(), dtype));
    TESS_RETURN_IF_ERROR(CheckOverflow(c.imag(), f.imag(), dtype));
    Store<std::complex<float>>(data, i, f);
  }
  return Status::OK();
}

void ToBool(const JsonLeaves& l, uint8_t* data) {
  // NumPy: null -> False, NaN -> True, any nonzero number -> True.
  for (size_t i = 0; i < l.kinds.size(); ++i) {
    data[i] = l.kinds[i] == JsonLeaves::kFloat ? std::bit_cast<double>(l.bits[i]) != 0 : l.bits[i] != 0;
  }
}

Value LeafValue(const JsonLeaves& l, size_t i) {
  const uint64_t b = l.bits[i];
  switch (l.kinds[i]) {
    case JsonLeaves::kBool: return Value(b != 0);
    case JsonLeaves::kInt: return Value(static_cast<int64_t>(b));
    case JsonLeaves::kUInt: return Value(b);
    case JsonLeaves::kFloat: return Value(std::bit_cast<double>(b));
    case JsonLeaves::kString: return Value(l.strings[b]);
    default: return Value();
  }
}

Value NestedValue(const JsonLeaves& l, size_t axis, size_t& next) {
  if (axis == l.dims.size()) return LeafValue(l, next++);
  Value::List list;
  for (int64_t i = 0; i < l.dims[axis]; ++i) list.push_back(NestedValue(l, axis + 1, next));
  return Value(std::move(list));
}

// Longest spelling of one non-complex element ("-1.7976931348623157e+308").
constexpr size_t kMaxElementChars = kMaxJsonDoubleChars;

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

char* CopyToken(std::string_view token, char* out) { return std::copy(token.begin(), token.end(), out); }

char* FormatDouble(double v, char* out) {
  if (!std::isfinite(v)) return CopyToken("null", out);  // as orjson writes NaN and infinities
  return out + FormatJsonDouble(v, out);
}

template <typename T>
char* FormatInteger(T v, char* out) {
  return std::to_chars(out, out + kMaxElementChars, v).ptr;
}

// Writes element `p` of a non-complex dtype as arr.tolist() + orjson would.
char* FormatElement(const uint8_t* p, Dtype dtype, char* out) {
  switch (dtype) {
    case Dtype::kBool: return CopyToken(*p != 0 ? "true" : "false", out);
    case Dtype::kInt8: return FormatInteger(Load<int8_t>(p), out);
    case Dtype::kInt16: return FormatInteger(Load<int16_t>(p), out);
    case Dtype::kInt32: return FormatInteger(Load<int32_t>(p), out);
    case Dtype::kInt64: return FormatInteger(Load<int64_t>(p), out);
    case Dtype::kUInt8: return FormatInteger(Load<uint8_t>(p), out);
    case Dtype::kUInt16: return FormatInteger(Load<uint16_t>(p), out);
    case Dtype::kUInt32: return FormatInteger(Load<uint32_t>(p), out);
    case Dtype::kUInt64: return FormatInteger(Load<uint64_t>(p), out);
    case Dtype::kFloat16: return FormatDouble(core::HalfToFloat(Load<uint16_t>(p)), out);
    case Dtype::kFloat32: return FormatDouble(Load<float>(p), out);
    default: return FormatDouble(Load<double>(p), out);
  }
}

// Writes elements [first, first + count) as JSON values separated by commas.
// Complex values are strings ("1+2j", pydantic's spelling) and go one by one;
// everything else is formatted straight into the output, one row at a time.
void WriteElements(const Tensor& t, int64_t first, int64_t count, JsonWriter& w) {
  const int64_t itemsize = ItemSize(t.dtype());
  const uint8_t* data = t.data() + first * itemsize;
  if (IsComplex(t.dtype())) {
    for (int64_t i = 0; i < count; ++i) {
      std::complex<double> c;
      if (t.dtype() == Dtype::kComplex64) {
        const auto f = Load<std::complex<float>>(data + i * itemsize);
        c = {f.real(), f.imag()};
      } else {
        c = Load<std::complex<double>>(data + i * itemsize);
      }
      std::string text;
      AppendPydanticComplex(c, text);
      w.String(text);
    }
    return;
  }
  if (count == 0) return;
  char* out = w.BeginValues(static_cast<size_t>(count) * (kMaxElementChars + 1));
  if (out == nullptr) return;
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0) *out++ = ',';
    out = FormatElement(data + i * itemsize, t.dtype(), out);
  }
  w.CommitValues(out);
}

void WriteNested(const Tensor& t, int axis, int64_t offset, JsonWriter& w) {
  if (axis == t.rank()) {  // a 0-d array is a bare value
    WriteElements(t, offset, 1, w);
    return;
  }
  w.BeginArray();
  const int64_t dim = t.shape()[axis];
  if (axis == t.rank() - 1) {
    WriteElements(t, offset * dim, dim, w);
  } else {
    for (int64_t i = 0; i < dim; ++i) WriteNested(t, axis + 1, offset * dim + i, w);
  }
  w.EndArray();
}

}  // namespace

Status ValueOutOfRange(Dtype dtype, const std::string& example) {
  return WithArrayIssue(Status::ValidationError("Array values do not fit into dtype '", DtypeName(dtype),
                                                "' (e.g. ", example, ")"),
                        "array_value_out_of_range",
                        Value::Dict{{"expected_dtype", DtypeName(dtype)}, {"value", example}});
}

Result<Dtype> InferJsonDtype(const JsonLeaves& leaves) {
  const Summary summary(leaves);
  if (summary.any_string) return NonNumeric(Value::Kind::kString);
  if (summary.any_null) return NonNumeric(Value::Kind::kNull);
  switch (summary.kind()) {
    case SourceKind::kBool: return Dtype::kBool;
    case SourceKind::kInt: return Dtype::kInt64;
    case SourceKind::kUInt64: return Dtype::kUInt64;
    default: return Dtype::kFloat64;
  }
}

Result<JsonLeaves> FlattenJsonValue(const Value& buffer) {
  JsonLeavesBuilder builder;
  TESS_RETURN_IF_ERROR(AddValue(buffer, builder));
  return builder.Finish();
}

Value JsonLeavesToValue(const JsonLeaves& leaves) {
  size_t next = 0;
  return NestedValue(leaves, 0, next);
}

Result<Tensor> JsonLeavesToTensor(const JsonLeaves& leaves, Dtype dtype, const Shape& shape,
                                  BufferPool* pool) {
  if (static_cast<int64_t>(leaves.kinds.size()) != shape.num_elements()) {
    return WithArrayIssue(Status::DecodeError("cannot reshape array of size ", leaves.kinds.size(),
                                              " into shape ", shape.ToString()),
                          "array_decode_error");
  }
  const Summary summary(leaves);
  const SourceKind kind = summary.kind();
  if (kind == SourceKind::kString && !IsComplex(dtype)) {
    return NonNumeric(Value::Kind::kString);
  }
  if (summary.any_null && IsInteger(dtype)) {
    return NonNumericArray(Status::ValidationError("null cannot be converted to ", DtypeName(dtype)));
  }
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, shape, pool));
  uint8_t* data = tensor.data();
  Status status;
  switch (dtype) {
    case Dtype::kBool: ToBool(leaves, data); break;
    case Dtype::kInt8: status = ToInteger<int8_t>(leaves, kind, dtype, data); break;
    case Dtype::kInt16: status = ToInteger<int16_t>(leaves, kind, dtype, data); break;
    case Dtype::kInt32: status = ToInteger<int32_t>(leaves, kind, dtype, data); break;
    case Dtype::kInt64: status = ToInteger<int64_t>(leaves, kind, dtype, data); break;
    case Dtype::kUInt8: status = ToInteger<uint8_t>(leaves, kind, dtype, data); break;
    case Dtype::kUInt16: status = ToInteger<uint16_t>(leaves, kind, dtype, data); break;
    case Dtype::kUInt32: status = ToInteger<uint32_t>(leaves, kind, dtype, data); break;
    case Dtype::kUInt64: status = ToInteger<uint64_t>(leaves, kind, dtype, data); break;
    case Dtype::kFloat16:
    case Dtype::kFloat32:
    case Dtype::kFloat64: status = ToFloating(leaves, dtype, data); break;
    case Dtype::kComplex64:
    case Dtype::kComplex128: status = ToComplex(leaves, dtype, data); break;
  }
  TESS_RETURN_IF_ERROR(status);
  return tensor;
}

void WriteJsonBuffer(const Tensor& tensor, JsonWriter& writer) { WriteNested(tensor, 0, 0, writer); }

}  // namespace tesscpp::codec
