// float16.h: IEEE binary16 <-> binary32 conversion (internal).
//
// float16 arrays cross the wire as raw bytes; the json encoding and dtype casts
// need their values. F16C would do this in one instruction, but the scalar
// version is exact, portable and far from any hot path.
#pragma once

#include <bit>
#include <cstdint>

namespace tesscpp::core {

/// \brief Exact widening of a binary16 bit pattern.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {  // inf / nan, keep the payload
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // zero
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

/// \brief binary64 -> binary16 with one rounding to nearest even, as NumPy's
/// float64 -> float16 cast (going through float32 would round twice). A float
/// argument converts exactly to double first, so this serves float32 too.
inline uint16_t DoubleToHalf(double d) {
  const uint64_t bits = std::bit_cast<uint64_t>(d);
  const auto sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  const uint64_t abs = bits & 0x7fffffffffffffffull;
  if (abs >= 0x7ff0000000000000ull) {  // inf, or nan (kept quiet, top payload bits kept)
    if (abs == 0x7ff0000000000000ull) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 42) & 0x3ffu));
  }
  if (abs >= 0x40effe0000000000ull) return sign | 0x7c00u;  // >= 65520 rounds to inf
  // Round `mantissa >> shift` to nearest, ties to even.
  auto round_shift = [](uint64_t mantissa, unsigned shift) {
    uint64_t half = mantissa >> shift;
    const uint64_t rest = mantissa & ((uint64_t{1} << shift) - 1);
    const uint64_t halfway = uint64_t{1} << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return half;
  };
  if (abs < 0x3f10000000000000ull) {                // below 2^-14: subnormal half or zero
    if (abs <= 0x3e60000000000000ull) return sign;  // <= 2^-25 rounds to zero
    const auto exponent = static_cast<unsigned>(abs >> 52);
    const uint64_t mantissa = (abs & 0xfffffffffffffull) | (uint64_t{1} << 52);
    return static_cast<uint16_t>(sign | round_shift(mantissa, 1051 - exponent));
  }
  // Normal: rebias the exponent (1023 -> 15) and keep 10 mantissa bits; a carry
  // out of the mantissa correctly bumps the exponent.
  const uint64_t rebiased = abs - (uint64_t{1008} << 52);
  return static_cast<uint16_t>(sign | round_shift(rebiased, 42));
}

}  // namespace tesscpp::core
