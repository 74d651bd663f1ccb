// negotiate.h: choosing a response encoding from the Accept header, with
// tesseract-core 1.15's rules: media ranges ordered by q,
// wildcards meaning the configured format, gpu_transport and compression as
// parameters, 406 when nothing offered fits.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/codec/array_encoding.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

struct Encoding {
  OutputFormat format = OutputFormat::kJson;
  std::string gpu_transport = "none";  ///< "none", or the enabled transport's name
  Compression compression = Compression::kNone;
};

struct Offer {
  OutputFormat default_format = OutputFormat::kJson;     ///< config output_format
  Compression default_compression = Compression::kNone;  ///< config compression
  std::vector<OutputFormat> formats;
  std::vector<std::string> gpu_transports;  ///< "none" and the enabled transport
  std::vector<Compression> compressions;

  /// \brief The lists by name, as /openapi.json and the 406 body show them.
  std::vector<std::string> FormatNames() const;
  std::vector<std::string> CompressionNames() const;
};

/// \brief The encoding to answer with, or nullopt when none is acceptable.
std::optional<Encoding> NegotiateEncoding(std::optional<std::string_view> accept, const Offer& offer);

/// \brief The 406 body: {"detail": {"message", "available_formats",
/// "available_gpu_transports", "available_compressions"}}.
Value NotAcceptableBody(std::string_view accept, const Offer& offer);

}  // namespace tesscpp::runtime
