// uuid.cc: version-4 UUIDs from a per-thread Mersenne Twister seeded by the OS.
#include "platform/uuid.h"

#include <cstdint>
#include <random>

namespace tesscpp::platform {

std::string NewUuid4() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng(), lo = rng();
  hi = (hi & 0xffffffffffff0fffull) | 0x0000000000004000ull;  // version 4
  lo = (lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    const uint64_t word = i < 16 ? hi : lo;
    out += kHex[(word >> (60 - 4 * (i % 16))) & 15];
    if (i == 7 || i == 11 || i == 15 || i == 19) out += '-';
  }
  return out;
}

}  // namespace tesscpp::platform
