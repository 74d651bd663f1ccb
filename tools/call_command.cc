#include "call_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <utility>

#include "command_context.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/endpoint_table.h"

namespace tesscpp::cli {
namespace {

namespace core = tesscpp::core;

// Whether the floats of a host array all have a JSON spelling (JSON has none
// for inf and nan, which would print as null). Device arrays are not read.
bool AllFinite(const tesscpp::Tensor& t) {
  if (t.device().type != tesscpp::DeviceType::kCPU) return false;
  const int64_t n = t.num_elements();
  auto finite = [](const auto* values, int64_t count) {
    return std::all_of(values, values + count, [](auto x) { return std::isfinite(x); });
  };
  switch (t.dtype()) {
    case tesscpp::Dtype::kFloat16:  // all-ones exponent: inf or nan
      return std::none_of(t.data_as<const uint16_t>(), t.data_as<const uint16_t>() + n,
                          [](uint16_t h) { return (h & 0x7C00) == 0x7C00; });
    case tesscpp::Dtype::kFloat32: return finite(t.data_as<const float>(), n);
    case tesscpp::Dtype::kComplex64: return finite(t.data_as<const float>(), 2 * n);
    case tesscpp::Dtype::kFloat64: return finite(t.data_as<const double>(), n);
    case tesscpp::Dtype::kComplex128: return finite(t.data_as<const double>(), 2 * n);
    default: return true;
  }
}

// Whether every array in `v` prints as a JSON list without loss.
bool PrintsLosslesslyAsJson(const tesscpp::Value& v) {
  if (v.is_tensor()) return AllFinite(v.as_tensor());
  if (v.is_list()) {
    return std::all_of(v.as_list().begin(), v.as_list().end(), PrintsLosslesslyAsJson);
  }
  if (v.is_dict()) {
    return std::all_of(v.as_dict().begin(), v.as_dict().end(),
                       [](const auto& item) { return PrintsLosslesslyAsJson(item.second); });
  }
  return true;
}

// `tesscpp call`'s request, sent through the client's method for it.
Result<tesscpp::Value> CallEndpoint(const tesscpp::Tesseract& t, const CallOptions& o,
                                    const tesscpp::Value& p) {
  const std::string& e = o.endpoint;
  if (e == "openapi" || e == "openapi.json") return t.OpenApiSchema();
  const std::optional<core::EndpointId> id = core::FindEndpoint(e);
  if (!id) return Status::InvalidArgument("unknown endpoint '", e, "' (", CallableEndpoints(), ")");
  if (*id == core::EndpointId::kHealth) return t.Health();
  if (*id == core::EndpointId::kTest) {
    TESS_ASSIGN_OR_RETURN(tesscpp::TestOutcome outcome, t.Test(p));
    return tesscpp::Value::Dict{{"status", tesscpp::Value(outcome.status)},
                                {"message", tesscpp::Value(outcome.message)}};
  }
  // Every component endpoint, present and future: the request as it is.
  return t.Call(e, p, o.run_id);
}

}  // namespace

std::string CallableEndpoints() {
  std::string names;
  for (const core::EndpointInfo& e : core::Endpoints()) names += std::string(e.name) + ", ";
  return names + "openapi";
}

int Call(const CallOptions& o) {
  tesscpp::Value payload;
  if (!o.payload.empty()) {
    auto parsed = ReadClientPayload(o.payload);
    if (!parsed.ok()) return Fail(parsed.status());
    payload = *std::move(parsed);
  }
  auto tesseract = tesscpp::Tesseract::FromUrl(o.url, o.client);
  if (!tesseract.ok()) return Fail(tesseract.status());
  auto result = CallEndpoint(*tesseract, o, payload);
  if (!result.ok()) {
    std::cerr << "tesscpp: " << o.endpoint << " failed: " << result.status().message() << "\n";
    return 2;
  }
  tesscpp::JsonWriteOptions write;
  // auto: lists where they are lossless, base64 (exact) as soon as one is not.
  if (o.print_arrays == "base64" || (o.print_arrays == "auto" && !PrintsLosslesslyAsJson(*result))) {
    write.arrays.encoding = tesscpp::ArrayEncoding::kBase64;
  }
  auto text = tesscpp::WriteJson(*result, write);
  if (!text.ok()) return Fail(text.status());
  std::cout.write(reinterpret_cast<const char*>(text->data()), static_cast<std::streamsize>(text->size()));
  std::cout << std::endl;
  return 0;
}

}  // namespace tesscpp::cli
