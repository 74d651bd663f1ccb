// negotiate.h: choosing a response encoding from the Accept header, with
// tesseract-core 1.15's rules: media ranges ordered by q,
// wildcards meaning the configured format, gpu_transport and compression as
// parameters, 406 when nothing offered fits.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

struct Encoding {
  std::string format;         ///< "json", "json+base64", "json+binref"
  std::string gpu_transport;  ///< "none" (or an enabled transport)
  std::string compression;    ///< "none" or "lz4"
};

struct Offer {
  std::string default_format;       ///< config output_format
  std::string default_compression;  ///< config compression ("none" or "lz4")
  std::vector<std::string> formats;
  std::vector<std::string> gpu_transports;
  std::vector<std::string> compressions;
};

/// \brief The encoding to answer with, or nullopt when none is acceptable.
std::optional<Encoding> NegotiateEncoding(std::optional<std::string_view> accept, const Offer& offer);

/// \brief The 406 body: {"detail": {"message", "available_formats",
/// "available_gpu_transports", "available_compressions"}}.
Value NotAcceptableBody(std::string_view accept, const Offer& offer);

}  // namespace tesscpp::runtime
