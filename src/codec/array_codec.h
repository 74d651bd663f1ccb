// array_codec.h: arraydict <-> Tensor for every host encoding (internal).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/json_writer.h"
#include "tesscpp/internal/codec/array_options.h"
#include "tesscpp/tensor.h"
#include "tesscpp/validation_issue.h"
#include "tesscpp/value.h"

namespace tesscpp::codec {

/// \brief `cause` (code and message kept) carrying one validation issue of
/// pydantic type `type` with no location yet: the layers above prepend it. The
/// issue's message is `msg`, or the cause's message when `msg` is empty.
Status WithArrayIssue(const Status& cause, std::string_view type, Value ctx = Value::Dict{},
                      std::string msg = "");

/// \brief How the reference types what goes wrong with an array value.
/// NonNumericArray: "array_non_numeric", with the reference's message; what a
/// malformed arraydict field (shape, dtype, encoding, extra keys) ends as too,
/// because pydantic then tries the value as a plain array-like. A json buffer is
/// decoded in one try block, so every failure but the reference's own typed ones
/// (expected integer, out of range) surfaces as "array_decode_error":
/// JsonBufferFailure. ValueOutOfRange: "array_value_out_of_range".
Status NonNumericArray(const Status& cause);
Status JsonBufferFailure(const Status& cause);
Status ValueOutOfRange(Dtype dtype, const std::string& example);

/// \brief The leaves of a json-encoded buffer, flattened in order, with the
/// rectangular nesting they came in. 9 bytes per element: a JSON array of 30 M
/// numbers stays compact, where a Value tree would take gigabytes.
struct JsonLeaves {
  enum Kind : uint8_t { kBool, kInt, kUInt, kFloat, kNull, kString };
  std::vector<int64_t> dims;         ///< the nesting (NumPy's inferred shape)
  std::vector<uint8_t> kinds;        ///< one Kind per leaf
  std::vector<uint64_t> bits;        ///< bool 0/1, int64, uint64 or double bits; kString: index
  std::vector<std::string> strings;  ///< the kString leaves
};

/// \brief Builds JsonLeaves from a stream of list and leaf events, checking
/// that the lists are rectangular (what np.asarray requires).
class JsonLeavesBuilder {
 public:
  void BeginList() { ++depth_; }
  /// \brief Closes the innermost list, which held `count` children.
  Status EndList(int64_t count);
  Status AddBool(bool b) { return AddLeaf(JsonLeaves::kBool, b ? 1 : 0); }
  Status AddInt(int64_t i) { return AddLeaf(JsonLeaves::kInt, static_cast<uint64_t>(i)); }
  Status AddUInt(uint64_t u) { return AddLeaf(JsonLeaves::kUInt, u); }
  Status AddDouble(double d);
  Status AddNull() { return AddLeaf(JsonLeaves::kNull, 0); }
  Status AddString(std::string s);
  JsonLeaves Finish() { return std::move(leaves_); }

 private:
  Status AddLeaf(JsonLeaves::Kind kind, uint64_t bits);
  static Status Ragged(int depth);

  JsonLeaves leaves_;
  int depth_ = 0;
  int leaf_depth_ = -1;
};

/// \brief The leaves of a Value holding nested lists of numbers.
Result<JsonLeaves> FlattenJsonValue(const Value& buffer);

/// \brief The dtype np.asarray gives the leaves: bool, int64, uint64 (integers
/// above INT64_MAX and none negative) or float64; array_non_numeric for
/// strings and nulls (NumPy would make a str or object array).
Result<Dtype> InferJsonDtype(const JsonLeaves& leaves);

/// \brief The nested lists back as a Value (for objects that were not arrays).
Value JsonLeavesToValue(const JsonLeaves& leaves);

/// \brief The fields of one arraydict, borrowed from wherever they were parsed.
struct ArrayFields {
  const Value* shape = nullptr;        ///< must be a list of non-negative ints
  const Value* dtype = nullptr;        ///< must be a dtype name
  const Value* encoding = nullptr;     ///< data.encoding
  const Value* compression = nullptr;  ///< data.compression; absent (nullptr) or null = none
  /// data.buffer when it is a JSON string: its text. The JSON reader passes the
  /// raw bytes between the quotes, which may still hold escapes; decoders that
  /// meet a backslash report it, and the reader retries with the unescaped text.
  std::optional<std::string_view> buffer_text;
  /// data.buffer when it is anything else (the json encoding's nested lists).
  const Value* buffer_value = nullptr;
  /// data.buffer as flattened leaves, when the reader parsed it that way.
  const JsonLeaves* buffer_leaves = nullptr;
};

/// \brief Decodes one arraydict. Errors name the field, e.g. "data.buffer: ...".
Result<Tensor> DecodeArrayFields(const ArrayFields& fields, const ArrayDecodeOptions& options);

/// \brief Writes `tensor` as an arraydict value.
Status EncodeArray(const Tensor& tensor, const ArrayEncodeOptions& options, JsonWriter& writer);

/// \brief The json encoding's leaves -> tensor, with NumPy's conversion rules
/// (np.asarray(buffer).reshape(shape), then the reference's checked cast that
/// refuses to lose values). Integers convert exactly even next to floats, where
/// NumPy would round them through float64 first.
Result<Tensor> JsonLeavesToTensor(const JsonLeaves& leaves, Dtype dtype, const Shape& shape,
                                  BufferPool* pool);

/// \brief Writes the tensor's elements as arr.tolist() would, nested by shape.
void WriteJsonBuffer(const Tensor& tensor, JsonWriter& writer);

/// \brief binref: parses "path[:offset[:compressed_size]]", resolves the path
/// inside `binref_dir`, checks the byte range, then reads (and decompresses) it
/// into a new tensor, or (`borrowed_files` set, uncompressed, aligned) into a
/// tensor over a copy-on-write mapping of the file, whose path is recorded.
Result<Tensor> ReadBinref(std::string_view spec, Compression compression, const std::string& binref_dir,
                          Dtype dtype, Shape shape, BufferPool* pool,
                          std::vector<std::string>* borrowed_files = nullptr);

}  // namespace tesscpp::codec
