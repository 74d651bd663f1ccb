// device.h: where a tensor's bytes live. Values equal DLPack's DLDeviceType.
#pragma once

#include <cstdint>
#include <string>

namespace tesscpp {

enum class DeviceType : int32_t {
  kCPU = 1,       ///< kDLCPU
  kCUDA = 2,      ///< kDLCUDA
  kCUDAHost = 3,  ///< kDLCUDAHost: pinned host memory
};

/// \brief A device: type plus ordinal (DLPack's DLDevice).
struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t id = 0;

  static constexpr Device CPU() { return Device{}; }
  static constexpr Device CUDA(int32_t ordinal) { return Device{DeviceType::kCUDA, ordinal}; }

  /// \brief True when the host can read the bytes directly (CPU or pinned).
  bool host_accessible() const { return type == DeviceType::kCPU || type == DeviceType::kCUDAHost; }

  /// \brief "cpu", "cuda:0", "cuda_host".
  std::string ToString() const;

  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace tesscpp
