// json_array.cc: the "json" array encoding, nested lists <-> tensor.
//
// Decoding follows what the reference does with a json buffer:
// np.asarray(buffer).reshape(shape), then a checked cast to the dtype that
// refuses to lose values (tesseract_core's _astype_checked): fractional floats
// into integers, integers outside the target's range, and finite floats that
// overflow to inf are errors. Encoding writes arr.tolist() the way orjson prints
// it (floats widened to double, NaN and Inf as null, complex as pydantic's
// strings such as "1+2j").
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "codec/array_codec.h"
#include "codec/number_format.h"
#include "core/float16.h"

namespace tesscpp::internal {
namespace {

// What np.asarray would infer for the leaves, from narrowest to widest.
enum class SourceKind { kBool, kInt, kUInt64, kFloat, kString };

struct Leaves {
  std::vector<const Value*> items;
  bool any_float = false, any_int = false, any_big_uint = false, any_negative = false;
  bool any_null = false, any_string = false;

  SourceKind kind() const {
    if (any_string) return SourceKind::kString;
    if (any_float || any_null) return SourceKind::kFloat;
    if (any_big_uint) return any_negative ? SourceKind::kFloat : SourceKind::kUInt64;
    return any_int ? SourceKind::kInt : SourceKind::kBool;
  }
};

Status CollectLeaves(const Value& v, const std::vector<int64_t>& dims, size_t depth, Leaves& out) {
  if (depth < dims.size()) {
    if (!v.is_list() || static_cast<int64_t>(v.as_list().size()) != dims[depth]) {
      return Status::DecodeError("the nested lists are not rectangular (inhomogeneous shape after ",
                                 depth, " dimensions)");
    }
    for (const Value& item : v.as_list()) TESS_RETURN_IF_ERROR(CollectLeaves(item, dims, depth + 1, out));
    return Status::OK();
  }
  switch (v.kind()) {
    case Value::Kind::kBool: break;
    case Value::Kind::kInt:
      out.any_int = true;
      if (v.is_big_uint()) {
        out.any_big_uint = true;
      } else if (v.as_int() < 0) {
        out.any_negative = true;
      }
      break;
    case Value::Kind::kFloat: out.any_float = true; break;
    case Value::Kind::kNull: out.any_null = true; break;
    case Value::Kind::kString: out.any_string = true; break;
    case Value::Kind::kList:
      return Status::DecodeError("the nested lists are not rectangular (inhomogeneous shape after ",
                                 depth, " dimensions)");
    default:
      return Status::ValidationError("could not parse value as a numeric array (contains ",
                                     Value::KindName(v.kind()), " data)");
  }
  out.items.push_back(&v);
  return Status::OK();
}

double AsDouble(const Value& v) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  return v.as_number();
}

int64_t AsInt(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
uint64_t AsUInt(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_uint(); }

std::string ShowNumber(double v) {
  std::string s;
  AppendJsonDouble(v, s);
  return s;
}

Status OutOfRange(Dtype dtype, const std::string& example) {
  return Status::ValidationError("Array values do not fit into dtype '", DtypeName(dtype), "' (e.g. ",
                                 example, ")");
}

template <typename T>
void Store(uint8_t* data, int64_t i, T value) {
  std::memcpy(data + i * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}

// Integers: check the fraction (float sources) and the range, then store.
template <typename T>
Status ToInteger(const Leaves& leaves, SourceKind kind, Dtype dtype, uint8_t* data) {
  const int64_t n = static_cast<int64_t>(leaves.items.size());
  if (kind == SourceKind::kFloat) {
    for (const Value* v : leaves.items) {
      const double d = AsDouble(*v);
      if (!std::isfinite(d) || d != std::floor(d)) {
        return Status::ValidationError("Expected integer data, but array contains floating point values");
      }
    }
    // Bounds as exactly representable doubles: [lo, hi_exclusive).
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi_exclusive = std::ldexp(1.0, std::numeric_limits<T>::digits);
    double low = INFINITY, high = -INFINITY;
    for (const Value* v : leaves.items) {
      low = std::min(low, AsDouble(*v));
      high = std::max(high, AsDouble(*v));
    }
    if (n > 0 && low < lo) return OutOfRange(dtype, ShowNumber(low));
    if (n > 0 && high >= hi_exclusive) return OutOfRange(dtype, ShowNumber(high));
    for (int64_t i = 0; i < n; ++i) Store<T>(data, i, static_cast<T>(AsDouble(*leaves.items[i])));
    return Status::OK();
  }
  if (kind == SourceKind::kUInt64) {
    uint64_t high = 0;
    for (const Value* v : leaves.items) high = std::max(high, AsUInt(*v));
    if (high > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return OutOfRange(dtype, std::to_string(high));
    }
    for (int64_t i = 0; i < n; ++i) Store<T>(data, i, static_cast<T>(AsUInt(*leaves.items[i])));
    return Status::OK();
  }
  int64_t low = std::numeric_limits<int64_t>::max(), high = std::numeric_limits<int64_t>::min();
  for (const Value* v : leaves.items) {
    low = std::min(low, AsInt(*v));
    high = std::max(high, AsInt(*v));
  }
  if (n > 0) {
    if (std::is_unsigned_v<T> ? low < 0 : low < static_cast<int64_t>(std::numeric_limits<T>::min())) {
      return OutOfRange(dtype, std::to_string(low));
    }
    if (high > 0 && static_cast<uint64_t>(high) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return OutOfRange(dtype, std::to_string(high));
    }
  }
  for (int64_t i = 0; i < n; ++i) Store<T>(data, i, static_cast<T>(AsInt(*leaves.items[i])));
  return Status::OK();
}

// Values as doubles (complex: pairs), the widest a float or complex target needs.
// int64 -> float64 is exact only up to 2^53, as in NumPy.
Result<std::vector<std::complex<double>>> ComplexValues(const Leaves& leaves) {
  std::vector<std::complex<double>> values;
  values.reserve(leaves.items.size());
  for (const Value* v : leaves.items) {
    if (v->is_string()) {
      std::complex<double> c;
      if (!ParseComplex(v->as_string(), &c)) {
        return Status::ValidationError("could not convert string '", v->as_string(), "' to a complex number");
      }
      values.push_back(c);
    } else {
      values.emplace_back(AsDouble(*v), 0.0);
    }
  }
  return values;
}

// A finite value that became infinite was too large for the target.
Status CheckOverflow(double before, double after, Dtype dtype) {
  if (std::isfinite(before) && !std::isfinite(after)) return OutOfRange(dtype, ShowNumber(before));
  return Status::OK();
}

Status ToFloating(const Leaves& leaves, Dtype dtype, uint8_t* data) {
  const int64_t n = static_cast<int64_t>(leaves.items.size());
  for (int64_t i = 0; i < n; ++i) {
    const double d = AsDouble(*leaves.items[i]);
    switch (dtype) {
      case Dtype::kFloat16: {
        const uint16_t h = DoubleToHalf(d);
        TESS_RETURN_IF_ERROR(CheckOverflow(d, HalfToFloat(h), dtype));
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

Status ToComplex(const Leaves& leaves, Dtype dtype, uint8_t* data) {
  TESS_ASSIGN_OR_RETURN(std::vector<std::complex<double>> values, ComplexValues(leaves));
  for (size_t i = 0; i < values.size(); ++i) {
    const std::complex<double> c = values[i];
    if (dtype == Dtype::kComplex128) {
      Store<std::complex<double>>(data, static_cast<int64_t>(i), c);
      continue;
    }
    const std::complex<float> f(static_cast<float>(c.real()), static_cast<float>(c.imag()));
    TESS_RETURN_IF_ERROR(CheckOverflow(c.real(), f.real(), dtype));
    TESS_RETURN_IF_ERROR(CheckOverflow(c.imag(), f.imag(), dtype));
    Store<std::complex<float>>(data, static_cast<int64_t>(i), f);
  }
  return Status::OK();
}

Status ToBool(const Leaves& leaves, uint8_t* data) {
  for (size_t i = 0; i < leaves.items.size(); ++i) {
    const Value& v = *leaves.items[i];
    // NumPy: null -> False, NaN -> True, any nonzero number -> True.
    const bool b = v.is_null() ? false : v.is_bool() ? v.as_bool() : v.is_big_uint() || v.as_number() != 0;
    data[i] = b ? 1 : 0;
  }
  return Status::OK();
}

void WriteElement(const Tensor& t, int64_t i, JsonWriter& w) {
  const uint8_t* p = t.data() + i * ItemSize(t.dtype());
  auto load = [p]<typename T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (t.dtype()) {
    case Dtype::kBool: w.Bool(*p != 0); break;
    case Dtype::kInt8: w.Int(load(static_cast<int8_t*>(nullptr))); break;
    case Dtype::kInt16: w.Int(load(static_cast<int16_t*>(nullptr))); break;
    case Dtype::kInt32: w.Int(load(static_cast<int32_t*>(nullptr))); break;
    case Dtype::kInt64: w.Int(load(static_cast<int64_t*>(nullptr))); break;
    case Dtype::kUInt8: w.UInt(load(static_cast<uint8_t*>(nullptr))); break;
    case Dtype::kUInt16: w.UInt(load(static_cast<uint16_t*>(nullptr))); break;
    case Dtype::kUInt32: w.UInt(load(static_cast<uint32_t*>(nullptr))); break;
    case Dtype::kUInt64: w.UInt(load(static_cast<uint64_t*>(nullptr))); break;
    case Dtype::kFloat16: w.Double(HalfToFloat(load(static_cast<uint16_t*>(nullptr)))); break;
    case Dtype::kFloat32: w.Double(load(static_cast<float*>(nullptr))); break;
    case Dtype::kFloat64: w.Double(load(static_cast<double*>(nullptr))); break;
    case Dtype::kComplex64: {
      const auto c = load(static_cast<std::complex<float>*>(nullptr));
      std::string s;
      AppendPydanticComplex({c.real(), c.imag()}, s);
      w.String(s);
      break;
    }
    case Dtype::kComplex128: {
      std::string s;
      AppendPydanticComplex(load(static_cast<std::complex<double>*>(nullptr)), s);
      w.String(s);
      break;
    }
  }
}

void WriteNested(const Tensor& t, int axis, int64_t offset, JsonWriter& w) {
  if (axis == t.rank()) {
    WriteElement(t, offset, w);
    return;
  }
  w.BeginArray();
  const int64_t dim = t.shape()[axis];
  for (int64_t i = 0; i < dim; ++i) WriteNested(t, axis + 1, offset * dim + i, w);
  w.EndArray();
}

}  // namespace

Result<Tensor> JsonBufferToTensor(const Value& buffer, Dtype dtype, const Shape& shape, BufferPool* pool) {
  // The nesting NumPy would see: follow first elements down.
  std::vector<int64_t> dims;
  for (const Value* v = &buffer; v->is_list(); v = &v->as_list().front()) {
    dims.push_back(static_cast<int64_t>(v->as_list().size()));
    if (v->as_list().empty()) break;
  }
  Leaves leaves;
  TESS_RETURN_IF_ERROR(CollectLeaves(buffer, dims, 0, leaves));
  if (static_cast<int64_t>(leaves.items.size()) != shape.num_elements()) {
    return Status::DecodeError("cannot reshape array of size ", leaves.items.size(), " into shape ",
                               shape.ToString());
  }
  const SourceKind kind = leaves.kind();
  if (kind == SourceKind::kString && !IsComplex(dtype)) {
    return Status::ValidationError("could not parse value as a numeric array (contains string data)");
  }
  if (leaves.any_null && IsInteger(dtype)) {
    return Status::ValidationError("null cannot be converted to ", DtypeName(dtype));
  }
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, shape, pool));
  uint8_t* data = tensor.data();
  Status status;
  switch (dtype) {
    case Dtype::kBool: status = ToBool(leaves, data); break;
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

}  // namespace tesscpp::internal
