// array_coercion.cc: shape checks, size-1 broadcasting and checked dtype casts.
//
// Follows tesseract_core.runtime.array_encoding: an arraydict must already fit
// the field's schema (rank, fixed dimensions as N or 1, a castable dtype), or it
// fails as array_non_numeric; a plain JSON array-like goes through np.asarray
// and then gets the detailed errors (dimensionality, shape, dtype). Both are then
// broadcast and cast with the same checks.
#include "schema/array_coercion.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "codec/array_codec.h"
#include "core/float16.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::schema {
namespace {

// Every element of every dtype fits exactly in an x87 long double (64-bit
// mantissa): int64 and uint64 included, so one intermediate serves all casts.
struct Number {
  long double re;
  long double im;
};

Number Load(const uint8_t* p, Dtype d) {
  auto get = [p]<typename T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (d) {
    case Dtype::kBool: return {*p != 0 ? 1.0L : 0.0L, 0};
    case Dtype::kInt8: return {static_cast<long double>(get(static_cast<int8_t*>(nullptr))), 0};
    case Dtype::kInt16: return {static_cast<long double>(get(static_cast<int16_t*>(nullptr))), 0};
    case Dtype::kInt32: return {static_cast<long double>(get(static_cast<int32_t*>(nullptr))), 0};
    case Dtype::kInt64: return {static_cast<long double>(get(static_cast<int64_t*>(nullptr))), 0};
    case Dtype::kUInt8: return {static_cast<long double>(get(static_cast<uint8_t*>(nullptr))), 0};
    case Dtype::kUInt16: return {static_cast<long double>(get(static_cast<uint16_t*>(nullptr))), 0};
    case Dtype::kUInt32: return {static_cast<long double>(get(static_cast<uint32_t*>(nullptr))), 0};
    case Dtype::kUInt64: return {static_cast<long double>(get(static_cast<uint64_t*>(nullptr))), 0};
    case Dtype::kFloat16: return {core::HalfToFloat(get(static_cast<uint16_t*>(nullptr))), 0};
    case Dtype::kFloat32: return {get(static_cast<float*>(nullptr)), 0};
    case Dtype::kFloat64: return {get(static_cast<double*>(nullptr)), 0};
    case Dtype::kComplex64: {
      const auto c = get(static_cast<std::complex<float>*>(nullptr));
      return {c.real(), c.imag()};
    }
    case Dtype::kComplex128: {
      const auto c = get(static_cast<std::complex<double>*>(nullptr));
      return {c.real(), c.imag()};
    }
  }
  return {0, 0};
}

template <typename T>
void Put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Stores a value already known to fit (integers were range-checked).
void Store(uint8_t* p, Dtype d, Number n) {
  switch (d) {
    case Dtype::kBool: *p = (n.re != 0 || n.im != 0) ? 1 : 0; break;
    case Dtype::kInt8: Put(p, static_cast<int8_t>(n.re)); break;
    case Dtype::kInt16: Put(p, static_cast<int16_t>(n.re)); break;
    case Dtype::kInt32: Put(p, static_cast<int32_t>(n.re)); break;
    case Dtype::kInt64: Put(p, static_cast<int64_t>(n.re)); break;
    case Dtype::kUInt8: Put(p, static_cast<uint8_t>(n.re)); break;
    case Dtype::kUInt16: Put(p, static_cast<uint16_t>(n.re)); break;
    case Dtype::kUInt32: Put(p, static_cast<uint32_t>(n.re)); break;
    case Dtype::kUInt64: Put(p, static_cast<uint64_t>(n.re)); break;
    case Dtype::kFloat16: Put(p, core::DoubleToHalf(static_cast<double>(n.re))); break;
    case Dtype::kFloat32: Put(p, static_cast<float>(n.re)); break;
    case Dtype::kFloat64: Put(p, static_cast<double>(n.re)); break;
    case Dtype::kComplex64:
      Put(p, std::complex<float>(static_cast<float>(n.re), static_cast<float>(n.im)));
      break;
    case Dtype::kComplex128:
      Put(p, std::complex<double>(static_cast<double>(n.re), static_cast<double>(n.im)));
      break;
  }
}

// Whether a finite value becomes infinite in a narrower float dtype.
bool Overflows(Dtype d, long double v) {
  switch (d) {
    case Dtype::kFloat16:
      return std::isfinite(v) && std::isinf(core::HalfToFloat(core::DoubleToHalf(static_cast<double>(v))));
    case Dtype::kFloat32:
    case Dtype::kComplex64: return std::isfinite(v) && std::isinf(static_cast<float>(v));
    default: return false;
  }
}

std::string Show(long double v) {
  // Integers print as integers, others as the reference's (Python) repr would.
  if (v == std::floor(v) && std::fabs(v) < 1e19L) {
    return v < 0 ? std::to_string(static_cast<int64_t>(v)) : std::to_string(static_cast<uint64_t>(v));
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", static_cast<double>(v));
  return buf;
}

Status OutOfRange(Dtype to, long double example) { return codec::ValueOutOfRange(to, Show(example)); }

Value ShapeList(std::span<const int64_t> dims) {
  Value::List out;
  for (int64_t d : dims) out.push_back(Value(d));
  return Value(std::move(out));
}

Status NonNumeric(const Value& input) {
  return codec::NonNumericArray(
      Status::ValidationError("a ", Value::KindName(input.kind()), " is not an array"));
}

// An arraydict (already a Tensor) must fit the field's schema as the reference's
// pydantic model of it does: exact rank, fixed dims N as N or 1, castable dtype.
bool FitsEncodedModel(const SchemaType& type, const Tensor& t) {
  if (type.dtype() && !Castable(t.dtype(), *type.dtype())) return false;
  if (type.shape().any_rank()) return true;
  if (type.shape().rank() != t.rank()) return false;
  for (int i = 0; i < t.rank(); ++i) {
    const auto& want = type.shape().dims()[static_cast<size_t>(i)];
    if (want && t.shape()[i] != *want && t.shape()[i] != 1) return false;
  }
  return true;
}

// array_shape_mismatch: `expected` as the reference prints it (a tuple) and
// as its ctx holds it.
Status ShapeMismatch(std::span<const int64_t> actual, const std::string& expected_text, Value expected) {
  return ValidationFailure(
      "array_shape_mismatch",
      "Array shape " + FormatShape(actual) + " is incompatible with expected shape " + expected_text, Value(),
      Value::Dict{{"actual_shape", ShapeList(actual)}, {"expected_shape", std::move(expected)}});
}

// check_shape_dtype_no_cast: device arrays are used as they arrived, so their
// shape must match (no broadcast) and their dtype equal the field's (no cast).
Status CheckShapeDtypeNoCast(const SchemaType& type, const Tensor& t, const char* no_cast_reason) {
  const ShapeSpec& spec = type.shape();
  bool fits = spec.any_rank() || spec.rank() == t.rank();
  for (int i = 0; fits && !spec.any_rank() && i < t.rank(); ++i) {
    const auto& want = spec.dims()[static_cast<size_t>(i)];
    fits = !want || *want == t.shape()[i];
  }
  if (!fits) {
    // The tuple as Python prints it, None for free dimensions.
    std::string expected = "(";
    Value::List expected_list;
    for (size_t i = 0; i < spec.dims().size(); ++i) {
      const auto& d = spec.dims()[i];
      expected += (i > 0 ? ", " : "") + (d ? std::to_string(*d) : std::string("None"));
      expected_list.push_back(d ? Value(*d) : Value());
    }
    expected += spec.rank() == 1 ? ",)" : ")";
    return ShapeMismatch(t.shape().dims(), expected, Value(std::move(expected_list)));
  }
  if (type.dtype() && *type.dtype() != t.dtype()) {
    const std::string actual(DtypeName(t.dtype())), expected(DtypeName(*type.dtype()));
    return ValidationFailure(
        "array_dtype_mismatch",
        "Array dtype '" + actual + "' does not match expected dtype '" + expected + "' (" + no_cast_reason +
            ")",
        Value(),
        Value::Dict{
            {"actual_dtype", actual}, {"expected_dtype", expected}, {"no_cast_reason", no_cast_reason}});
  }
  return Status::OK();
}

// _coerce_shape_dtype: rank, broadcast to the fixed dims, checked cast.
Result<Tensor> CoerceShapeDtype(const SchemaType& type, Tensor t, BufferPool* pool) {
  const ShapeSpec& spec = type.shape();
  if (!spec.any_rank()) {
    if (spec.rank() != t.rank()) {
      return ValidationFailure("array_dimensionality_mismatch",
                               "Array has wrong number of dimensions: got " + std::to_string(t.rank()) +
                                   "D, expected " + std::to_string(spec.rank()) + "D",
                               Value(),
                               Value::Dict{{"actual_dims", t.rank()}, {"expected_dims", spec.rank()}});
    }
    std::vector<int64_t> out(t.shape().dims().begin(), t.shape().dims().end());
    bool broadcast = false;
    for (size_t i = 0; i < out.size(); ++i) {
      if (spec.dims()[i]) out[i] = *spec.dims()[i];
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t have = t.shape()[static_cast<int>(i)];
      if (have == out[i]) continue;
      if (have != 1) {
        return ShapeMismatch(t.shape().dims(), FormatShape(out), ShapeList(out));
      }
      broadcast = true;
    }
    if (broadcast) {
      TESS_ASSIGN_OR_RETURN(Shape target, Shape::Make(std::move(out)));
      TESS_ASSIGN_OR_RETURN(t, BroadcastTo(t, target, pool));
    }
  }
  if (type.dtype() && *type.dtype() != t.dtype()) {
    if (!Castable(t.dtype(), *type.dtype())) {
      const std::string actual(DtypeName(t.dtype())), expected(DtypeName(*type.dtype()));
      return ValidationFailure("array_dtype_mismatch",
                               "Array dtype '" + actual + "' cannot be safely cast to '" + expected + "'",
                               Value(), Value::Dict{{"actual_dtype", actual}, {"expected_dtype", expected}});
    }
    TESS_ASSIGN_OR_RETURN(t, CastChecked(t, *type.dtype(), pool));
  }
  return t;
}

}  // namespace

std::complex<double> ElementAt(const Tensor& t, int64_t i) {
  const Number n = Load(t.data() + i * ItemSize(t.dtype()), t.dtype());
  return {static_cast<double>(n.re), static_cast<double>(n.im)};
}

bool Castable(Dtype from, Dtype to) {
  return CanCastSameKind(from, to) || (IsInteger(from) && IsInteger(to));
}

Result<Tensor> CastChecked(const Tensor& t, Dtype to, BufferPool* pool) {
  if (t.dtype() == to) return t;
  const Dtype from = t.dtype();
  const int64_t n = t.num_elements();
  const int64_t in_size = ItemSize(from);
  if (IsInteger(to) && !CanCastSafe(from, to) && n > 0) {
    long double low = INFINITY, high = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      const Number v = Load(t.data() + i * in_size, from);
      if (IsFloating(from) && (!std::isfinite(v.re) || v.re != std::floor(v.re))) {
        return ValidationFailure("array_expected_integer",
                                 "Expected integer data, but array contains floating point values", Value(),
                                 Value::Dict{});
      }
      low = std::min(low, v.re);
      high = std::max(high, v.re);
    }
    const bool is_unsigned = KindOf(to) == DtypeKind::kUnsigned;
    const int bits = static_cast<int>(ItemSize(to) * 8);
    const long double min = is_unsigned ? 0.0L : -std::ldexp(1.0L, bits - 1);
    const long double max = (is_unsigned ? std::ldexp(1.0L, bits) : std::ldexp(1.0L, bits - 1)) - 1;
    if (low < min) return OutOfRange(to, low);
    if (high > max) return OutOfRange(to, high);
  }
  TESS_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(to, t.shape(), pool));
  const int64_t out_size = ItemSize(to);
  const bool narrowing_float =
      (to == Dtype::kFloat16 || to == Dtype::kFloat32 || to == Dtype::kComplex64) && !CanCastSafe(from, to);
  for (int64_t i = 0; i < n; ++i) {
    const Number v = Load(t.data() + i * in_size, from);
    if (narrowing_float && (Overflows(to, v.re) || Overflows(to, v.im))) {
      return OutOfRange(to, Overflows(to, v.re) ? v.re : v.im);
    }
    Store(out.data() + i * out_size, to, v);
  }
  return out;
}

Result<Tensor> BroadcastTo(const Tensor& t, const Shape& shape, BufferPool* pool) {
  TESS_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(t.dtype(), shape, pool));
  const int rank = shape.rank();
  const int64_t item = ItemSize(t.dtype());
  // Input strides in elements, 0 along broadcast dimensions.
  std::vector<int64_t> in_strides(static_cast<size_t>(rank));
  for (int axis = 0; axis < rank; ++axis) {
    in_strides[static_cast<size_t>(axis)] = t.shape()[axis] == 1 ? 0 : t.strides()[static_cast<size_t>(axis)];
  }
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < out.num_elements(); ++flat) {
    int64_t source = 0;
    for (int axis = 0; axis < rank; ++axis)
      source += index[static_cast<size_t>(axis)] * in_strides[static_cast<size_t>(axis)];
    std::memcpy(out.data() + flat * item, t.data() + source * item, static_cast<size_t>(item));
    for (int axis = rank - 1; axis >= 0; --axis) {  // next index, last axis fastest
      if (++index[static_cast<size_t>(axis)] < shape[axis]) break;
      index[static_cast<size_t>(axis)] = 0;
    }
  }
  return out;
}

Result<Value> CoerceArray(const SchemaType& type, const Value& input, BufferPool* pool) {
  if (input.is_tensor()) {
    const Tensor& t = input.as_tensor();
    if (!FitsEncodedModel(type, t)) {
      return codec::NonNumericArray(Status::ValidationError("a ", DtypeName(t.dtype()), " array of shape ",
                                                            t.shape().ToString(), " does not fit the field"));
    }
    if (!t.device().host_accessible()) {
      TESS_RETURN_IF_ERROR(CheckShapeDtypeNoCast(type, t, "cuda_ipc does not cast on device"));
      return input;
    }
    TESS_ASSIGN_OR_RETURN(Tensor out, CoerceShapeDtype(type, t, pool));
    return Value(std::move(out));
  }
  if (!input.is_number() && !input.is_bool() && !input.is_list()) return NonNumeric(input);
  // np.asarray(value): the nesting gives the shape, the leaves the dtype.
  TESS_ASSIGN_OR_RETURN(codec::JsonLeaves leaves, codec::FlattenJsonValue(input));
  TESS_ASSIGN_OR_RETURN(Dtype inferred, InferJsonDtype(leaves));
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(leaves.dims));
  TESS_ASSIGN_OR_RETURN(Tensor t, JsonLeavesToTensor(leaves, inferred, shape, pool));
  TESS_ASSIGN_OR_RETURN(Tensor out, CoerceShapeDtype(type, std::move(t), pool));
  return Value(std::move(out));
}

}  // namespace tesscpp::schema
