// encoding.h: how arrays travel on the wire.
//
// An array crosses the wire as an "arraydict":
//   {"object_type": "array", "shape": [3], "dtype": "float64",
//    "data": {"buffer": ..., "encoding": "base64", "compression": "lz4"}}
// with the buffer as nested JSON lists ("json"), a base64 string ("base64"), a
// file reference "path[:offset[:compressed_size]]" ("binref"), or a GPU
// transport's descriptor of device memory (its own encoding name, such as
// "cuda_ipc", and a buffer string only the transport reads). lz4 compresses the
// raw bytes of base64 and binref arrays. This header holds the names, the
// options, the binref file writer and the arraydict decoder for Values built
// by hand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/shape.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp {

class BufferPool;

/// \brief How a list of the names below reads in a message or help text:
/// "json, json+base64 or json+binref", or "'json', 'base64' or 'binref'".
enum class NameList : uint8_t { kPlain, kQuoted };
/// \brief `names` as a list in that style (what the *Choices functions give).
std::string NameChoices(const std::vector<std::string_view>& names, NameList style);

/// \brief The host encodings. Device arrays are written in the encoding of
/// the GPU transport that carries them (DeviceArrayWriter::encoding()).
enum class ArrayEncoding : uint8_t { kJson, kBase64, kBinref };
enum class Compression : uint8_t { kNone, kLz4 };

/// \brief "json", "base64", "binref".
std::string_view ArrayEncodingName(ArrayEncoding encoding);
/// \brief Parses an encoding name; kValidationError listing the valid ones.
Result<ArrayEncoding> ArrayEncodingFromName(std::string_view name);
/// \brief Every name, from the one table the names come from (so messages
/// and help texts follow a new entry); likewise for each kind below.
std::string ArrayEncodingChoices(NameList style);
/// \brief "none" or "lz4".
std::string_view CompressionName(Compression compression);
/// \brief Parses "lz4" (and "none"); kValidationError otherwise.
Result<Compression> CompressionFromName(std::string_view name);
std::string CompressionChoices(NameList style);

/// \brief A response body's format, as the Accept header and
/// TESSERACT_OUTPUT_FORMAT name it: JSON with arrays as nested lists,
/// base64 strings, or references to binary files.
enum class OutputFormat : uint8_t { kJson, kJsonBase64, kJsonBinref };
/// \brief "json", "json+base64", "json+binref".
std::string_view OutputFormatName(OutputFormat format);
/// \brief Parses a format name; kInvalidArgument listing the valid ones.
Result<OutputFormat> OutputFormatFromName(std::string_view name);
std::string OutputFormatChoices(NameList style);
/// \brief The array encoding a body format writes arrays with.
ArrayEncoding ArrayEncodingOf(OutputFormat format);

/// \brief How the codec reads device arrays. A GPU transport's arrays carry
/// the transport's wire encoding ("cuda_ipc") and a `data.buffer` string only
/// the transport understands: the codec links no device runtime, and the
/// transport (src/gpu_transport/, one object per message) implements this.
class DeviceArrayReader {
 public:
  virtual ~DeviceArrayReader() = default;
  /// \brief Whether arraydicts of wire encoding `encoding` are read here.
  virtual bool Reads(std::string_view encoding) const = 0;
  /// \brief The `dtype`/`shape` tensor that `descriptor` names: a copy the
  /// reader owns, or the peer's memory read in place. kValidationError when
  /// the descriptor is malformed (the peers' request model refuses it);
  /// another code when it names nothing this process can read.
  virtual Result<Tensor> Import(std::string_view encoding, std::string_view descriptor, Dtype dtype,
                                const Shape& shape) = 0;
};

/// \brief How the codec writes device arrays: the tensors a GPU transport
/// carries go out as its descriptors.
class DeviceArrayWriter {
 public:
  virtual ~DeviceArrayWriter() = default;
  /// \brief The wire encoding the descriptors are written with.
  virtual std::string_view encoding() const = 0;
  /// \brief Whether `tensor` goes through the transport (the others are
  /// written with the host encoding).
  virtual bool Carries(const Tensor& tensor) const = 0;
  /// \brief The `data.buffer` string naming `tensor`, which the transport
  /// keeps readable and unchanged until the message's owner lets it go.
  virtual Result<std::string> Export(const Tensor& tensor) = 0;
};

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

/// \brief Where binref arrays are written: Append stores bytes and returns the
/// buffer reference "path:offset" (relative to the directory the reader resolves
/// against).
class BinrefSink {
 public:
  virtual ~BinrefSink() = default;
  virtual Result<std::string> Append(std::span<const uint8_t> bytes) = 0;
};

/// \brief Appends binref arrays to files as the reference server does: every
/// array of one response goes into `<base_dir>/<subdir>/<uuid4>.bin`, one after
/// another, and a new file starts once the current one holds more than
/// `max_file_size` bytes (0: one file per non-empty array, as the SDK writes
/// request inputs). Buffer strings are relative to `base_dir`. Not
/// thread-safe; one writer per response.
class BinrefWriter final : public BinrefSink {
 public:
  static constexpr int64_t kDefaultMaxFileSize = int64_t{100} << 20;  // 100 MiB, as the reference

  explicit BinrefWriter(std::string base_dir, std::string subdir = "",
                        int64_t max_file_size = kDefaultMaxFileSize);
  ~BinrefWriter() override;
  BinrefWriter(BinrefWriter&&) noexcept;
  BinrefWriter& operator=(BinrefWriter&&) noexcept;

  /// \brief Appends `bytes` and returns "<subdir>/<uuid>.bin:<offset>".
  /// kIoError naming the file when it cannot be created or written.
  Result<std::string> Append(std::span<const uint8_t> bytes) override;

  /// \brief A file whose first array has at least this many bytes may be a
  /// prepared one (set_file_source).
  static constexpr int64_t kLargeArray = int64_t{1} << 20;

  /// \brief Gives the path of a prepared file with at least `size` bytes
  /// allocated, on the filesystem of `base_dir`, or nullopt. The writer
  /// renames it into place and cuts it to what it holds.
  using FileSource = std::function<std::optional<std::string>(int64_t size)>;

  /// \brief New files that start with a large array come from `source` when
  /// it has one (a server's pool of pre-faulted files, whose pages need not
  /// be allocated while the caller waits).
  void set_file_source(FileSource source);

  /// \brief The files created so far, as absolute paths.
  const std::vector<std::string>& files() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
