// array_codec.h: arraydict <-> Tensor for every host encoding (internal).
#pragma once

#include <optional>
#include <string_view>

#include "codec/json_writer.h"
#include "tesscpp/encoding.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::internal {

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
};

/// \brief Decodes one arraydict. Errors name the field, e.g. "data.buffer: ...".
Result<Tensor> DecodeArrayFields(const ArrayFields& fields, const ArrayDecodeOptions& options);

/// \brief Writes `tensor` as an arraydict value.
Status EncodeArray(const Tensor& tensor, const ArrayEncodeOptions& options, JsonWriter& writer);

/// \brief The json encoding's nested lists -> tensor, with NumPy's conversion
/// rules (np.asarray(buffer).reshape(shape), then the reference's checked cast).
Result<Tensor> JsonBufferToTensor(const Value& buffer, Dtype dtype, const Shape& shape, BufferPool* pool);

/// \brief Writes the tensor's elements as arr.tolist() would, nested by shape.
void WriteJsonBuffer(const Tensor& tensor, JsonWriter& writer);

/// \brief binref: parses "path[:offset[:compressed_size]]", resolves the path
/// inside `binref_dir`, and reads (and decompresses) the bytes into `out`.
Status ReadBinref(std::string_view spec, Compression compression, const std::string& binref_dir,
                  std::span<uint8_t> out);

}  // namespace tesscpp::internal
