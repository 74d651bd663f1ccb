// base64_internal.h: pieces the scalar and AVX2 codecs share (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tesscpp/status.h"

namespace tesscpp::codec {

/// \brief The error for the invalid byte at `offset`.
Status BadBase64Character(std::string_view src, size_t offset);

/// \brief Scalar decoding of src[from..] (from a multiple of 4, the final quad
/// included) into the matching position of dst. SIMD loops call it for the rest
/// of a string and to locate errors precisely.
Status Base64DecodeTail(std::string_view src, size_t from, uint8_t* dst);

}  // namespace tesscpp::codec
