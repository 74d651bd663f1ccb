// base64.h: strict standard-alphabet base64 (internal).
//
// Semantics are those of the reference runtime, pybase64's b64encode (with '='
// padding) and b64decode(validate=True): the length must be a multiple of 4,
// padding may only close the last quad (at most two '='), and every other byte
// must be in A-Z a-z 0-9 + /. Leftover bits under the padding are ignored, as
// pybase64 does. Whitespace is an error.
//
// Two implementations with the same contract: a scalar reference (table driven,
// ~3 GB/s) and an AVX2 codec (Mula-Lemire) selected at run time when the CPU has
// AVX2. TESSCPP_BASE64=scalar in the environment forces the scalar one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tesscpp/result.h"

namespace tesscpp::codec {

/// \brief Characters produced for `n` input bytes (padding included).
constexpr size_t Base64EncodedSize(size_t n) { return (n + 2) / 3 * 4; }

/// \brief Bytes that `encoded` decodes to, after checking its length and padding
/// (kDecodeError otherwise). The characters themselves are checked by decoding.
Result<size_t> Base64DecodedSize(std::string_view encoded);

/// \brief One implementation of the codec.
struct Base64Codec {
  std::string_view name;
  /// Writes exactly Base64EncodedSize(src.size()) characters to `dst`.
  void (*encode)(std::span<const uint8_t> src, char* dst);
  /// Decodes a string whose length and padding Base64DecodedSize accepted into
  /// `dst` (exactly that many bytes). kDecodeError naming the first bad byte and
  /// its offset; `dst` is then partially written.
  Status (*decode)(std::string_view src, uint8_t* dst);
};

const Base64Codec& ScalarBase64();
/// \brief The AVX2 codec, or nullptr when the CPU lacks AVX2.
const Base64Codec* Avx2Base64();
/// \brief The fastest codec this CPU runs (see TESSCPP_BASE64 above).
const Base64Codec& ActiveBase64();

/// \brief Encodes with the active codec.
inline void Base64Encode(std::span<const uint8_t> src, char* dst) { ActiveBase64().encode(src, dst); }

/// \brief `src` as a base64 string.
inline std::string Base64String(std::span<const uint8_t> src) {
  std::string text(Base64EncodedSize(src.size()), '\0');
  Base64Encode(src, text.data());
  return text;
}

/// \brief Checks length and padding, then decodes into `dst`, which must hold
/// exactly the decoded size (kDecodeError when it does not).
Status Base64Decode(std::string_view src, std::span<uint8_t> dst);

}  // namespace tesscpp::codec
