// lz4.h: LZ4 frame compression as the protocol uses it (internal).
//
// Arrays compressed with "compression": "lz4" hold one LZ4 frame, written by the
// reference with python-lz4's lz4.frame.compress defaults: 64 KiB linked blocks,
// level 0, content size stored, no checksums. liblz4's frame API reads and
// writes exactly that format.
#pragma once

#include <cstdint>
#include <span>

#include "tesscpp/buffer.h"
#include "tesscpp/result.h"

namespace tesscpp {
class BufferPool;
}

namespace tesscpp::codec {

/// \brief Compresses `src` into one frame with python-lz4's default settings.
/// The buffer comes from `pool` (the default pool if null).
Result<Buffer> Lz4FrameCompress(std::span<const uint8_t> src, BufferPool* pool = nullptr);

/// \brief Checks, from the frame header alone, that a frame can expand to
/// `expected` bytes: kDecodeError for a bad header or a stored content size
/// that differs. A frame without a stored size passes (decoding checks it).
Status Lz4CheckContentSize(std::span<const uint8_t> src, int64_t expected);

/// \brief Decompresses one frame that must expand to exactly dst.size() bytes.
/// kDecodeError for a corrupt or truncated frame, or a size other than
/// dst.size() (checked against the header before decoding when the frame stores
/// it). Bytes after the end of the frame are ignored, as python-lz4 ignores them.
Status Lz4FrameDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst);

}  // namespace tesscpp::codec
