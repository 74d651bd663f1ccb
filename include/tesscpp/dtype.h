// dtype.h: the 14 element types of the Tesseract protocol.
//
// The protocol names dtypes with NumPy's lowercase names ("float32", "bool",
// "complex128"; no byte-order prefix, no bfloat16). Dtype is the enum, the free
// functions give names, sizes, DLPack codes and NumPy's casting rules.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tesscpp/result.h"

namespace tesscpp {

/// \brief An element type. Every value is valid; there is no "unknown" dtype.
enum class Dtype : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kComplex64,
  kComplex128,
};

/// \brief Every dtype, in enum order.
inline constexpr std::array<Dtype, 14> kAllDtypes = {
    Dtype::kBool,    Dtype::kInt8,    Dtype::kInt16,     Dtype::kInt32,     Dtype::kInt64,
    Dtype::kUInt8,   Dtype::kUInt16,  Dtype::kUInt32,    Dtype::kUInt64,    Dtype::kFloat16,
    Dtype::kFloat32, Dtype::kFloat64, Dtype::kComplex64, Dtype::kComplex128};

/// \brief NumPy's kinds, in NumPy's casting order (a value of a kind may be cast
/// "same_kind" to any later kind).
enum class DtypeKind : uint8_t { kBool, kUnsigned, kSigned, kFloat, kComplex };

/// \brief The protocol name, e.g. "float32".
std::string_view DtypeName(Dtype dtype);

/// \brief Parses a protocol name. Fails with kValidationError naming the value and
/// listing the allowed names when `name` is not one of the 14.
Result<Dtype> DtypeFromName(std::string_view name);

/// \brief Bytes per element (bool is 1 byte; complex64 is 8).
int64_t ItemSize(Dtype dtype);

DtypeKind KindOf(Dtype dtype);

inline bool IsInteger(Dtype d) {
  return KindOf(d) == DtypeKind::kSigned || KindOf(d) == DtypeKind::kUnsigned;
}
inline bool IsFloating(Dtype d) { return KindOf(d) == DtypeKind::kFloat; }
inline bool IsComplex(Dtype d) { return KindOf(d) == DtypeKind::kComplex; }

/// \brief NumPy's `can_cast(from, to, casting="safe")`: every value of `from` is
/// represented exactly in `to`.
bool CanCastSafe(Dtype from, Dtype to);

/// \brief NumPy's `can_cast(from, to, casting="same_kind")`: safe, or within a
/// kind, or towards a later kind (int64 -> float32 yes, float64 -> int32 no).
bool CanCastSameKind(Dtype from, Dtype to);

/// \brief DLPack's DLDataType fields (dlpack.h: code kDLInt=0, kDLUInt=1,
/// kDLFloat=2, kDLComplex=5, kDLBool=6; bits per lane; lanes).
struct DlpackDtype {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  friend bool operator==(const DlpackDtype&, const DlpackDtype&) = default;
};

DlpackDtype ToDlpack(Dtype dtype);

/// \brief The dtype for DLPack fields; kUnimplemented for types the protocol
/// cannot carry (bfloat16, vectors with lanes != 1, ...).
Result<Dtype> DtypeFromDlpack(DlpackDtype dl);

/// \brief The Dtype of a C++ element type, for typed access to tensors:
/// DtypeOf<float>() == Dtype::kFloat32. (float16 has no C++ type here.)
template <typename T>
constexpr Dtype DtypeOf() {
  if constexpr (std::is_same_v<T, bool>) {
    return Dtype::kBool;
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return Dtype::kInt8;
  } else if constexpr (std::is_same_v<T, int16_t>) {
    return Dtype::kInt16;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return Dtype::kInt32;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return Dtype::kInt64;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return Dtype::kUInt8;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return Dtype::kUInt16;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return Dtype::kUInt32;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return Dtype::kUInt64;
  } else if constexpr (std::is_same_v<T, float>) {
    return Dtype::kFloat32;
  } else if constexpr (std::is_same_v<T, double>) {
    return Dtype::kFloat64;
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    return Dtype::kComplex64;
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    return Dtype::kComplex128;
  } else {
    static_assert(sizeof(T) == 0, "no protocol dtype for this C++ type");
  }
}

}  // namespace tesscpp
