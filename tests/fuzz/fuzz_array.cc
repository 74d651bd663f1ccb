// Fuzz target: array decoding as a server does it. The input is a JSON document
// read with arraydict detection; binref paths resolve inside a scratch directory
// holding one small file, so path handling is exercised too; cuda_ipc
// descriptors are parsed and, without a GPU, refused.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "gpu_transport/ipc_arrays.h"
#include "gpu_transport/registry.h"
#include "tesscpp/internal/codec/json.h"

namespace {

std::string ScratchDir() {
  static const std::string dir = [] {
    auto path = std::filesystem::temp_directory_path() / ("tesscpp-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(path / "sub");
    std::ofstream(path / "a.bin", std::ios::binary) << std::string(256, '\x3f');
    std::ofstream(path / "sub" / "b.bin", std::ios::binary) << std::string(64, '\x01');
    return path.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tesscpp;
  JsonReadOptions options;
  options.arrays = (size % 2 == 0) ? ArrayDetection::kShaped : ArrayDetection::kTagged;
  options.array_options.binref_dir = ScratchDir();
  options.array_options.accept_raw = size % 3 == 0;
  // cuda_ipc buffers are parsed either way: refused as a server without the
  // transport refuses them, or with the transport on, imported too, copying
  // or borrowing (which fails cleanly where there is no device).
  const std::unique_ptr<DeviceArrayReader> refusing = gpu_transport::ServerRequestArrays(nullptr, "none");
  gpu_transport::IpcArrays copying = gpu_transport::IpcArrays::Copying();
  gpu_transport::IpcArrays borrowing = gpu_transport::IpcArrays::Borrowing();
  DeviceArrayReader* const modes[] = {refusing.get(), &copying, &borrowing};
  options.array_options.device_arrays = modes[(size / 6) % 3];  // independent of the choices above
  auto value = ReadJson(std::string_view(reinterpret_cast<const char*>(data), size), options);
  if (!value.ok()) return 0;
  // Whatever decoded must encode again, in every host encoding.
  for (ArrayEncoding encoding : {ArrayEncoding::kJson, ArrayEncoding::kBase64}) {
    JsonWriteOptions write;
    write.arrays.encoding = encoding;
    if (!WriteJson(*value, write).ok()) std::abort();
  }
  return 0;
}
