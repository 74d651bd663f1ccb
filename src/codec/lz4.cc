// lz4.cc: LZ4 frame compression through liblz4's LZ4F API.
#include "codec/lz4.h"

#include <lz4frame.h>

#include <memory>

#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::codec {
namespace {

LZ4F_preferences_t PythonLz4Defaults(size_t content_size) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockLinked;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
  prefs.frameInfo.contentSize = content_size;
  prefs.compressionLevel = 0;
  return prefs;
}

struct DctxDeleter {
  void operator()(LZ4F_dctx* ctx) const noexcept { LZ4F_freeDecompressionContext(ctx); }
};

// Reads the frame header with `ctx`: returns LZ4F's size hint for the next
// call, and sets `consumed` to the header's length.
Result<size_t> ReadHeader(LZ4F_dctx* ctx, std::span<const uint8_t> src, int64_t expected, size_t* consumed) {
  LZ4F_frameInfo_t info{};
  *consumed = src.size();
  const size_t hint = LZ4F_getFrameInfo(ctx, &info, src.data(), consumed);
  if (LZ4F_isError(hint)) return Status::DecodeError("invalid lz4 frame header: ", LZ4F_getErrorName(hint));
  if (info.contentSize != 0 && info.contentSize != static_cast<uint64_t>(expected)) {
    return Status::DecodeError("lz4 frame holds ", info.contentSize, " bytes, expected ", expected);
  }
  return hint;
}

Result<std::unique_ptr<LZ4F_dctx, DctxDeleter>> NewContext() {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return Status::ResourceExhausted("cannot create an lz4 decompression context");
  }
  return std::unique_ptr<LZ4F_dctx, DctxDeleter>(raw);
}

}  // namespace

Result<Buffer> Lz4FrameCompress(std::span<const uint8_t> src, BufferPool* pool) {
  if (pool == nullptr) pool = BufferPool::Default();
  const LZ4F_preferences_t prefs = PythonLz4Defaults(src.size());
  const size_t bound = LZ4F_compressFrameBound(src.size(), &prefs);
  TESS_ASSIGN_OR_RETURN(Buffer out, pool->Allocate(static_cast<int64_t>(bound)));
  const size_t written = LZ4F_compressFrame(out.data(), bound, src.data(), src.size(), &prefs);
  if (LZ4F_isError(written)) {
    return Status::Internal("lz4 compression failed: ", LZ4F_getErrorName(written));
  }
  return out.Slice(0, static_cast<int64_t>(written));
}

Status Lz4CheckContentSize(std::span<const uint8_t> src, int64_t expected) {
  TESS_ASSIGN_OR_RETURN(auto ctx, NewContext());
  size_t consumed = 0;
  return ReadHeader(ctx.get(), src, expected, &consumed).status();
}

Status Lz4FrameDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  TESS_ASSIGN_OR_RETURN(auto ctx, NewContext());
  // A stored content size lets us refuse a wrong size before touching the payload.
  size_t consumed = 0;
  TESS_ASSIGN_OR_RETURN(size_t hint, ReadHeader(ctx.get(), src, static_cast<int64_t>(dst.size()), &consumed));
  size_t in_pos = consumed;
  size_t out_pos = 0;
  while (hint != 0) {
    if (in_pos == src.size()) {
      return Status::DecodeError("lz4 frame is truncated after ", out_pos, " of ", dst.size(), " bytes");
    }
    size_t out_size = dst.size() - out_pos;
    size_t in_size = src.size() - in_pos;
    hint =
        LZ4F_decompress(ctx.get(), dst.data() + out_pos, &out_size, src.data() + in_pos, &in_size, nullptr);
    if (LZ4F_isError(hint)) {
      return Status::DecodeError("corrupt lz4 frame: ", LZ4F_getErrorName(hint));
    }
    in_pos += in_size;
    out_pos += out_size;
    if (hint != 0 && in_size == 0 && out_size == 0) {  // no progress: the output is full
      return Status::DecodeError("lz4 frame decompresses to more than ", dst.size(), " bytes");
    }
  }
  if (out_pos != dst.size()) {
    return Status::DecodeError("lz4 frame decompresses to ", out_pos, " bytes, expected ", dst.size());
  }
  // Bytes after the frame are ignored, as python-lz4's lz4.frame.decompress does.
  return Status::OK();
}

}  // namespace tesscpp::codec
