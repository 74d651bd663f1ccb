// requested_encoding.cc: what a client asks for, checked against what a
// server advertises, with tesseract-core 1.15's SDK rules.
#include <algorithm>

#include "tesscpp/client.h"

namespace tesscpp {
namespace {

std::optional<std::vector<std::string>> Advertised(const Value& document, std::string_view key) {
  if (!document.is_dict()) return std::nullopt;
  const Value* values = document.as_dict().find(key);
  if (values == nullptr || !values->is_list()) return std::nullopt;
  std::vector<std::string> out;
  for (const Value& v : values->as_list()) {
    if (v.is_string()) out.push_back(v.as_string());
  }
  return out;
}

constexpr char kDefaultFormat[] = "json+base64";

std::string JoinQuoted(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "'" : ", '") + v + "'";
  return out;
}

}  // namespace

ServerCapabilities ServerCapabilities::FromOpenApi(const Value& document) {
  return {Advertised(document, "x-supported-output-formats"),
          Advertised(document, "x-supported-gpu-transports"),
          Advertised(document, "x-supported-compressions")};
}

RequestedEncoding RequestedEncoding::Merge(const RequestedEncoding& overrides) const {
  return {overrides.output_format ? overrides.output_format : output_format,
          overrides.gpu_transport ? overrides.gpu_transport : gpu_transport,
          overrides.compression ? overrides.compression : compression};
}

std::optional<std::string> RequestedEncoding::AcceptHeader() const {
  if (!output_format && !gpu_transport && !compression) return std::nullopt;
  std::string accept = "application/" + output_format.value_or("*");
  if (gpu_transport) accept += "; gpu_transport=" + *gpu_transport;
  if (compression) accept += "; compression=" + *compression;
  return accept;
}

Result<RequestedEncoding> FitEncodingToServer(RequestedEncoding encoding,
                                              const ServerCapabilities& capabilities) {
  if (!capabilities.output_formats) {
    // Runtimes older than 1.13 read the whole Accept value as the format, so
    // a parameter would fail the request after the endpoint ran. They never
    // pass GPU arrays by reference, so gpu_transport=none can go unsaid.
    if (encoding.gpu_transport == "none") encoding.gpu_transport.reset();
    if (encoding.gpu_transport || encoding.compression) {
      const std::string names = encoding.gpu_transport && encoding.compression
                                    ? "gpu_transport or compression"
                                : encoding.gpu_transport ? "gpu_transport"
                                                         : "compression";
      return Status::InvalidArgument("This Tesseract's runtime is older than 1.13 and cannot be asked for ",
                                     names, " per request. Rebuild it with a newer runtime, or leave ", names,
                                     " unset.");
    }
    return encoding;
  }
  if (!capabilities.gpu_transports && encoding.gpu_transport && *encoding.gpu_transport != "none") {
    return Status::InvalidArgument(
        "This Tesseract's runtime (1.13 or 1.14) passes GPU arrays in a format this client does not read, so "
        "it "
        "cannot be asked for gpu_transport='",
        *encoding.gpu_transport, "'. Rebuild it with a newer runtime, or request gpu_transport='none'.");
  }
  struct Check {
    const char* name;
    const std::optional<std::string>& value;
    const std::optional<std::vector<std::string>>& accepted;
  };
  for (const Check& c : {Check{"output_format", encoding.output_format, capabilities.output_formats},
                         Check{"gpu_transport", encoding.gpu_transport, capabilities.gpu_transports},
                         Check{"compression", encoding.compression, capabilities.compressions}}) {
    if (c.value && c.accepted &&
        std::find(c.accepted->begin(), c.accepted->end(), *c.value) == c.accepted->end()) {
      return Status::InvalidArgument("This Tesseract does not accept ", c.name, "='", *c.value,
                                     "' (accepted: ", JoinQuoted(*c.accepted), ")");
    }
  }
  // A format left to the server is json+base64 where offered, not the
  // server's json: lossless (JSON answers turn +-inf into null) and several
  // times faster to write and read (docs/compatibility.md, "Client").
  const std::vector<std::string>& formats = *capabilities.output_formats;
  if (!encoding.output_format && std::find(formats.begin(), formats.end(), kDefaultFormat) != formats.end()) {
    encoding.output_format = kDefaultFormat;
  }
  return encoding;
}

std::string HttpErrorDetail::ToString() const {
  return "Error " + std::to_string(http_status_) + " from Tesseract: " + body_;
}

const HttpErrorDetail* GetHttpErrorDetail(const Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != HttpErrorDetail::kTypeId) return nullptr;
  return static_cast<const HttpErrorDetail*>(detail.get());
}

}  // namespace tesscpp
