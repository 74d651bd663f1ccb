// RuntimeConfig: tesseract-core's runtime settings, read from TESSERACT_*.
#include "tesscpp/internal/runtime/runtime.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <tuple>

#include "gpu_transport/registry.h"
#include "tesscpp/internal/codec/array_encoding.h"

namespace tesscpp {
namespace {

// The value of setting FIELD (upper case), or null.
using Lookup = std::function<const char*(const std::string& field)>;

// pydantic's boolean spellings.
Result<bool> ParseBool(const std::string& field, std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "true", "yes", "on", "y", "t"}) {
    if (text == t) return true;
  }
  for (const char* f : {"0", "false", "no", "off", "n", "f"}) {
    if (text == f) return false;
  }
  return Status::InvalidArgument("TESSERACT_", field, "='", text,
                                 "' is not a boolean (use 1/0, true/false, yes/no)");
}

// The whole of `text` as a number, or kInvalidArgument naming the variable.
template <typename T>
Result<T> ParseNumber(const std::string& field, std::string_view text, std::string_view what) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument("TESSERACT_", field, "='", text, "' is not ", what);
  }
  return value;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Result<RuntimeConfig> FromLookup(const Lookup& Env) {  // NOLINT(readability-identifier-naming)
  RuntimeConfig c;
  auto text = [&Env](const char* field, auto& into) {
    if (const char* v = Env(field)) into = std::string(v);
  };
  text("NAME", c.name);
  text("VERSION", c.version);
  if (const char* v = Env("DESCRIPTION")) {
    // The reference replaces a literal backslash-n with a newline.
    std::string d = v;
    for (size_t at = d.find("\\n"); at != std::string::npos; at = d.find("\\n", at + 1))
      d.replace(at, 2, "\n");
    c.description = d;
  }
  text("INPUT_PATH", c.input_path);
  text("OUTPUT_PATH", c.output_path);
  text("OUTPUT_FORMAT", c.output_format);
  text("OUTPUT_FILE", c.output_file);
  text("GPU_TRANSPORT", c.gpu_transport);
  text("MLFLOW_TRACKING_URI", c.mlflow_tracking_uri);
  text("MLFLOW_RUN_EXTRA_ARGS", c.mlflow_run_extra_args);
  if (const char* v = Env("COMPRESSION")) c.compression = *v == '\0' ? "none" : v;
  if (const char* v = Env("CUDA_IPC_POOL_FRACTION")) {
    TESS_ASSIGN_OR_RETURN(c.cuda_ipc_pool_fraction,
                          ParseNumber<double>("CUDA_IPC_POOL_FRACTION", v, "a number"));
  }
  // Below the bound, MiB in bytes and seconds in nanoseconds fit 63 bits.
  constexpr int64_t kMaxMib = (int64_t{1} << 43) - 1;
  constexpr int64_t kMaxSeconds = int64_t{1} << 32;
  for (auto [field, into, bound, what] :
       {std::tuple{"BINREF_OUTPUT_POOL_MB", &c.binref_output_pool_mb, kMaxMib, "a number of MiB (0 or more)"},
        std::tuple{"RESIDUAL_HOST_MB", &c.residual_host_mb, kMaxMib, "a number of MiB (0 or more)"},
        std::tuple{"RESIDUAL_DEVICE_MB", &c.residual_device_mb, kMaxMib, "a number of MiB (0 or more)"},
        std::tuple{"RESIDUAL_TTL_S", &c.residual_ttl_s, kMaxSeconds, "a number of seconds (0 or more)"}}) {
    if (const char* v = Env(field)) {
      TESS_ASSIGN_OR_RETURN(*into, ParseNumber<int64_t>(field, v, what));
      if (*into < 0 || *into > bound) {
        return Status::InvalidArgument("TESSERACT_", field, "='", v, "' is not ", what, " up to ", bound);
      }
    }
  }
  for (auto [field, flag] : {std::pair{"DEBUG", &c.debug}, std::pair{"PROFILING", &c.profiling},
                             std::pair{"TRACING", &c.tracing}}) {
    if (const char* v = Env(field)) {
      TESS_ASSIGN_OR_RETURN(*flag, ParseBool(field, v));
    }
  }
  c.input_path = Absolute(c.input_path);
  c.output_path = Absolute(c.output_path);
  TESS_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace

Result<RuntimeConfig> RuntimeConfig::FromEnvironment() {
  // TESSERACT_RUNTIME_<X> wins over TESSERACT_<X> (tesseract-runtime's CLI reads both).
  return FromLookup([](const std::string& field) -> const char* {
    if (const char* v = std::getenv(("TESSERACT_RUNTIME_" + field).c_str())) return v;
    return std::getenv(("TESSERACT_" + field).c_str());
  });
}

Result<RuntimeConfig> RuntimeConfig::FromSettings(
    const std::vector<std::pair<std::string, std::string>>& settings) {
  return FromLookup([&settings](const std::string& field) -> const char* {
    const char* found = nullptr;  // the last one wins
    for (const auto& [key, value] : settings) {
      std::string upper = key;
      for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (upper == field) found = value.c_str();
    }
    return found;
  });
}

Status RuntimeConfig::Validate() const {
  // Each message names its setting (TESSERACT_<SETTING>, --<setting>).
  TESS_RETURN_IF_ERROR(OutputFormatFromName(output_format).status().WithContext("output_format"));
  if (!CompressionFromName(compression).ok()) {
    return Status::InvalidArgument("compression '", compression, "' is not one of ",
                                   CompressionChoices(NameList::kPlain));
  }
  auto transport = gpu_transport::TransportNamed(gpu_transport);
  if (!transport.ok()) return transport.status().WithContext("gpu_transport");
  if (*transport != nullptr) {
    const Status available = (*transport)->available();
    if (!available.ok()) {
      return Status::InvalidArgument("gpu transport '", gpu_transport,
                                     "' is not available: ", available.message());
    }
  }
  if (!(cuda_ipc_pool_fraction >= 0.0 && cuda_ipc_pool_fraction <= 1.0)) {
    return Status::InvalidArgument("cuda_ipc_pool_fraction must be between 0 and 1, got ",
                                   cuda_ipc_pool_fraction);
  }
  return Status::OK();
}

}  // namespace tesscpp
