// array_options.h: how arrays are read and written, and the arraydict decoder
// for Values built by hand (internal). JSON bodies carry them in
// JsonReadOptions/JsonWriteOptions (json.h).
#pragma once

#include <string>
#include <vector>

#include "tesscpp/internal/codec/array_encoding.h"
#include "tesscpp/internal/codec/binref_writer.h"
#include "tesscpp/internal/codec/device_arrays.h"
#include "tesscpp/result.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp {

class BufferPool;

struct ArrayDecodeOptions {
  /// Directory that relative binref paths resolve in; a path that leaves it
  /// (absolute, "..", a symlink out) is refused. Empty: binref arrays are refused.
  std::string binref_dir;
  /// Where decoded tensors are allocated (the default pool if null).
  BufferPool* pool = nullptr;
  /// Accept "raw", the legacy name of "json" that the SDK still reads in responses
  /// (the server's request model refuses it).
  bool accept_raw = false;
  /// When set, uncompressed binref arrays borrow a copy-on-write mapping of
  /// their file instead of being copied out of it (writes stay private to this
  /// process), and the files' paths are appended here. Only for files nobody
  /// truncates while the tensors live (SIGBUS otherwise): the client's opt-in
  /// binref pool, which unlinks them after decoding.
  std::vector<std::string>* borrowed_binref_files = nullptr;
  /// How device arrays (a GPU transport's descriptors) are read, as the
  /// transport provides; null: their encodings are unknown here.
  DeviceArrayReader* device_arrays = nullptr;
};

struct ArrayEncodeOptions {
  ArrayEncoding encoding = ArrayEncoding::kJson;
  /// Applied to base64 and binref arrays; json never compresses (as the reference).
  Compression compression = Compression::kNone;
  /// Required for kBinref: where the bytes go.
  BinrefSink* binref = nullptr;
  /// Write "object_type": "array". Servers always do; the SDK omits it in requests.
  bool object_type = true;
  /// When set (a GPU transport was negotiated; it provides them), the
  /// tensors it carries go out as its descriptors (always with "object_type").
  DeviceArrayWriter* device_arrays = nullptr;
  /// Other device tensors are written with `encoding` from the host copy
  /// their memory makes (core::ImplicitCopyToHost, which honours
  /// TESSERACT_FORBID_DEVICE_HOST_COPY).
};

/// \brief Decodes an arraydict held as a Value dict. kValidationError for
/// missing, extra or mistyped fields, an unknown dtype or encoding, or a buffer
/// whose size does not match shape x dtype; kDecodeError for bad base64 or lz4;
/// kNotFound / kInvalidArgument for binref files that are missing or escape
/// `binref_dir`. Messages name the field ("data.buffer: ...").
Result<Tensor> DecodeArray(const Value& arraydict, const ArrayDecodeOptions& options = {});

}  // namespace tesscpp
