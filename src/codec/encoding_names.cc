// encoding_names.cc: the wire names of encodings, body formats, compressions
// and GPU transports, parsed once where they enter (config, Accept, arraydict)
// and compared as enums everywhere else.
#include <array>

#include "tesscpp/encoding.h"

namespace tesscpp {

std::string_view ArrayEncodingName(ArrayEncoding encoding) {
  switch (encoding) {
    case ArrayEncoding::kJson: return "json";
    case ArrayEncoding::kBase64: return "base64";
    case ArrayEncoding::kBinref: return "binref";
    case ArrayEncoding::kCudaIpc: return "cuda_ipc";
  }
  return "unknown";
}

Result<ArrayEncoding> ArrayEncodingFromName(std::string_view name) {
  for (ArrayEncoding e :
       {ArrayEncoding::kJson, ArrayEncoding::kBase64, ArrayEncoding::kBinref, ArrayEncoding::kCudaIpc}) {
    if (ArrayEncodingName(e) == name) return e;
  }
  return Status::ValidationError("unknown array encoding '", name,
                                 "' (expected 'json', 'base64', 'binref' or 'cuda_ipc')");
}

std::string_view CompressionName(Compression compression) {
  return compression == Compression::kLz4 ? "lz4" : "none";
}

Result<Compression> CompressionFromName(std::string_view name) {
  if (name == "lz4") return Compression::kLz4;
  if (name == "none") return Compression::kNone;
  return Status::ValidationError("unknown compression '", name, "' (expected 'lz4')");
}

std::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson: return "json";
    case OutputFormat::kJsonBase64: return "json+base64";
    case OutputFormat::kJsonBinref: return "json+binref";
  }
  return "unknown";
}

Result<OutputFormat> OutputFormatFromName(std::string_view name) {
  for (OutputFormat f : {OutputFormat::kJson, OutputFormat::kJsonBase64, OutputFormat::kJsonBinref}) {
    if (OutputFormatName(f) == name) return f;
  }
  return Status::InvalidArgument("output format '", name, "' is not one of json, json+base64, json+binref");
}

ArrayEncoding ArrayEncodingOf(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJsonBase64: return ArrayEncoding::kBase64;
    case OutputFormat::kJsonBinref: return ArrayEncoding::kBinref;
    case OutputFormat::kJson: break;
  }
  return ArrayEncoding::kJson;
}

std::string_view GpuTransportName(GpuTransport transport) {
  return transport == GpuTransport::kCudaIpc ? "cuda_ipc" : "none";
}

Result<GpuTransport> GpuTransportFromName(std::string_view name) {
  if (name == "none") return GpuTransport::kNone;
  if (name == "cuda_ipc") return GpuTransport::kCudaIpc;
  return Status::InvalidArgument("gpu transport '", name, "' is not one of none, cuda_ipc");
}

}  // namespace tesscpp
