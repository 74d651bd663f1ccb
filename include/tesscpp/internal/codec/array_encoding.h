// array_encoding.h: the names of the host array encodings, compressions and
// body formats, from one table each (internal).
//
// An array crosses the wire as an "arraydict":
//   {"object_type": "array", "shape": [3], "dtype": "float64",
//    "data": {"buffer": ..., "encoding": "base64", "compression": "lz4"}}
// with the buffer as nested JSON lists ("json"), a base64 string ("base64"), a
// file reference "path[:offset[:compressed_size]]" ("binref"), or a GPU
// transport's descriptor of device memory (its own encoding name, such as
// "cuda_ipc": device_arrays.h). lz4 compresses the raw bytes of base64 and
// binref arrays (docs/wire-encodings.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp {

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

}  // namespace tesscpp
