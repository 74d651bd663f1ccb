// dtype.cc: dtype tables and NumPy's casting rules.
#include "tesscpp/dtype.h"

#include <string>

namespace tesscpp {
namespace {

struct DtypeInfo {
  std::string_view name;
  int64_t itemsize;
  DtypeKind kind;
  uint8_t dlpack_code;
};

constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLComplex = 5, kDLBool = 6;

constexpr std::array<DtypeInfo, 14> kInfo = {{
    {"bool", 1, DtypeKind::kBool, kDLBool},
    {"int8", 1, DtypeKind::kSigned, kDLInt},
    {"int16", 2, DtypeKind::kSigned, kDLInt},
    {"int32", 4, DtypeKind::kSigned, kDLInt},
    {"int64", 8, DtypeKind::kSigned, kDLInt},
    {"uint8", 1, DtypeKind::kUnsigned, kDLUInt},
    {"uint16", 2, DtypeKind::kUnsigned, kDLUInt},
    {"uint32", 4, DtypeKind::kUnsigned, kDLUInt},
    {"uint64", 8, DtypeKind::kUnsigned, kDLUInt},
    {"float16", 2, DtypeKind::kFloat, kDLFloat},
    {"float32", 4, DtypeKind::kFloat, kDLFloat},
    {"float64", 8, DtypeKind::kFloat, kDLFloat},
    {"complex64", 8, DtypeKind::kComplex, kDLComplex},
    {"complex128", 16, DtypeKind::kComplex, kDLComplex},
}};

const DtypeInfo& Info(Dtype d) { return kInfo[static_cast<size_t>(d)]; }

// Bits of mantissa precision (including the implicit bit) that a floating or
// complex type offers per component; an integer of n value bits fits exactly when
// n <= precision. This reproduces NumPy's int -> float "safe" table
// (int8/uint8 -> float16, int16 -> float32, int32 -> float64, int64 -> float64).
int FloatPrecisionBits(Dtype d) {
  switch (d) {
    case Dtype::kFloat16: return 11;
    case Dtype::kFloat32:
    case Dtype::kComplex64: return 24;
    default: return 53;  // float64, complex128
  }
}

int ValueBits(Dtype d) {  // magnitude bits of an integer type
  const int bits = static_cast<int>(Info(d).itemsize * 8);
  return KindOf(d) == DtypeKind::kSigned ? bits - 1 : bits;
}

}  // namespace

std::string_view DtypeName(Dtype dtype) { return Info(dtype).name; }

Result<Dtype> DtypeFromName(std::string_view name) {
  for (Dtype d : kAllDtypes) {
    if (Info(d).name == name) return d;
  }
  std::string allowed;
  for (Dtype d : kAllDtypes) {
    if (!allowed.empty()) allowed += ", ";
    allowed += Info(d).name;
  }
  return Status::ValidationError("dtype '", name, "' is not one of: ", allowed);
}

int64_t ItemSize(Dtype dtype) { return Info(dtype).itemsize; }

DtypeKind KindOf(Dtype dtype) { return Info(dtype).kind; }

bool CanCastSafe(Dtype from, Dtype to) {
  const DtypeKind fk = KindOf(from), tk = KindOf(to);
  if (from == to || fk == DtypeKind::kBool) return true;
  if (tk == DtypeKind::kBool) return false;
  if (fk == DtypeKind::kUnsigned || fk == DtypeKind::kSigned) {
    if (tk == DtypeKind::kUnsigned) return fk == DtypeKind::kUnsigned && ItemSize(to) >= ItemSize(from);
    if (tk == DtypeKind::kSigned) return ValueBits(to) >= ValueBits(from);
    // NumPy treats int64 -> float64 as safe although it rounds above 2^53.
    if (ItemSize(from) == 8) return FloatPrecisionBits(to) == 53;
    return ValueBits(from) < FloatPrecisionBits(to);
  }
  if (fk == DtypeKind::kFloat) {
    if (tk == DtypeKind::kFloat) return ItemSize(to) >= ItemSize(from);
    if (tk == DtypeKind::kComplex) return ItemSize(to) >= 2 * ItemSize(from);
    return false;
  }
  // complex
  return tk == DtypeKind::kComplex && ItemSize(to) >= ItemSize(from);
}

bool CanCastSameKind(Dtype from, Dtype to) {
  if (CanCastSafe(from, to)) return true;
  // Within a kind, or towards a later kind in bool < uint < int < float < complex.
  return static_cast<int>(KindOf(to)) >= static_cast<int>(KindOf(from)) && KindOf(from) != DtypeKind::kBool;
}

DlpackDtype ToDlpack(Dtype dtype) {
  const DtypeInfo& info = Info(dtype);
  return DlpackDtype{info.dlpack_code, static_cast<uint8_t>(info.itemsize * 8), 1};
}

Result<Dtype> DtypeFromDlpack(DlpackDtype dl) {
  if (dl.lanes == 1) {
    for (Dtype d : kAllDtypes) {
      if (ToDlpack(d) == dl) return d;
    }
  }
  return Status::Unimplemented("DLPack dtype (code ", int{dl.code}, ", bits ", int{dl.bits}, ", lanes ",
                               dl.lanes, ") has no Tesseract dtype");
}

}  // namespace tesscpp
