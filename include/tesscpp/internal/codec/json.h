// json.h: reading and writing JSON documents as Value trees.
//
// Reading uses simdjson On-Demand over a padded buffer, so a request body is
// parsed where it lies; arraydicts can be decoded into Tensors during the parse,
// with base64 decoded straight from the body into the tensor. Writing produces
// compact JSON with the reference's spellings (orjson numbers; NaN and Inf as
// null) and encodes tensors as arraydicts.
#pragma once

#include <string_view>

#include "tesscpp/buffer.h"
#include "tesscpp/internal/codec/array_options.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp {

/// \brief Which JSON objects the reader turns into Tensors.
enum class ArrayDetection : uint8_t {
  kNone,    ///< none: arraydicts stay dicts
  kTagged,  ///< objects with "object_type": "array" (what the SDK decodes in responses)
  kShaped,  ///< also objects with just shape, dtype and data{encoding, ...} (what a server accepts)
};

struct JsonReadOptions {
  ArrayDetection arrays = ArrayDetection::kNone;
  ArrayDecodeOptions array_options;
  /// Deeper nesting is refused (kDecodeError) rather than risking the stack.
  int max_depth = 256;
  /// A number no Value holds exactly (an integer beyond 64 bits, a magnitude
  /// beyond the double range) is read as the nearest double (false), or
  /// refused with kOutOfRange naming its path (true), for a reader that
  /// would rather parse the text its own way than see an approximation.
  bool exact_numbers = false;
};

/// \brief Parses one JSON document. Without copying when `document.padded()`.
/// kDecodeError naming the problem and, where known, the path inside the
/// document; errors of arrays decoded on the way (see DecodeArray) carry the
/// array's path. kPayloadTooLarge for documents of 4 GiB or more.
Result<Value> ReadJson(const Buffer& document, const JsonReadOptions& options = {});
/// \brief Same, copying `document` into a padded buffer first.
Result<Value> ReadJson(std::string_view document, const JsonReadOptions& options = {});

struct JsonWriteOptions {
  /// How Tensor leaves are written.
  ArrayEncodeOptions arrays;
  /// Where the output buffer comes from (the default pool if null).
  BufferPool* pool = nullptr;
};

/// \brief Serialises `value` compactly. Errors: a tensor that cannot be encoded
/// as asked (device memory, binref without a writer, file I/O).
Result<Buffer> WriteJson(const Value& value, const JsonWriteOptions& options = {});

}  // namespace tesscpp
