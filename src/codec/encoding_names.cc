// encoding_names.cc: the wire names of host encodings, body formats and
// compressions, parsed once where they enter (config, Accept, arraydict) and
// compared as enums everywhere else. GPU transports name themselves in their
// registry (src/gpu_transport/registry.h).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/internal/codec/array_encoding.h"

namespace tesscpp {
namespace {

template <typename E>
using Names = std::pair<E, std::string_view>;

constexpr Names<ArrayEncoding> kArrayEncodings[] = {
    {ArrayEncoding::kJson, "json"}, {ArrayEncoding::kBase64, "base64"}, {ArrayEncoding::kBinref, "binref"}};
constexpr Names<Compression> kCompressions[] = {{Compression::kNone, "none"}, {Compression::kLz4, "lz4"}};
constexpr Names<OutputFormat> kOutputFormats[] = {{OutputFormat::kJson, "json"},
                                                  {OutputFormat::kJsonBase64, "json+base64"},
                                                  {OutputFormat::kJsonBinref, "json+binref"}};

template <typename E, size_t N>
std::string_view NameIn(const Names<E> (&table)[N], E value) {
  for (const auto& [entry, name] : table) {
    if (entry == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> FindIn(const Names<E> (&table)[N], std::string_view name) {
  for (const auto& [entry, entry_name] : table) {
    if (entry_name == name) return entry;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string ListOf(const Names<E> (&table)[N], NameList style) {
  std::vector<std::string_view> names;
  for (const auto& entry : table) names.push_back(entry.second);
  return NameChoices(names, style);
}

}  // namespace

std::string NameChoices(const std::vector<std::string_view>& names, NameList style) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    list += style == NameList::kQuoted ? "'" + std::string(names[i]) + "'" : std::string(names[i]);
  }
  return list;
}

std::string ArrayEncodingChoices(NameList style) { return ListOf(kArrayEncodings, style); }
std::string CompressionChoices(NameList style) { return ListOf(kCompressions, style); }
std::string OutputFormatChoices(NameList style) { return ListOf(kOutputFormats, style); }

std::string_view ArrayEncodingName(ArrayEncoding encoding) { return NameIn(kArrayEncodings, encoding); }

Result<ArrayEncoding> ArrayEncodingFromName(std::string_view name) {
  if (auto found = FindIn(kArrayEncodings, name)) return *found;
  return Status::ValidationError("unknown array encoding '", name, "' (expected ",
                                 ArrayEncodingChoices(NameList::kQuoted), ")");
}

std::string_view CompressionName(Compression compression) { return NameIn(kCompressions, compression); }

Result<Compression> CompressionFromName(std::string_view name) {
  if (auto found = FindIn(kCompressions, name)) return *found;
  return Status::ValidationError("unknown compression '", name, "' (expected 'lz4')");
}

std::string_view OutputFormatName(OutputFormat format) { return NameIn(kOutputFormats, format); }

Result<OutputFormat> OutputFormatFromName(std::string_view name) {
  if (auto found = FindIn(kOutputFormats, name)) return *found;
  return Status::InvalidArgument("output format '", name, "' is not one of ",
                                 OutputFormatChoices(NameList::kPlain));
}

ArrayEncoding ArrayEncodingOf(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJsonBase64: return ArrayEncoding::kBase64;
    case OutputFormat::kJsonBinref: return ArrayEncoding::kBinref;
    case OutputFormat::kJson: break;
  }
  return ArrayEncoding::kJson;
}

}  // namespace tesscpp
