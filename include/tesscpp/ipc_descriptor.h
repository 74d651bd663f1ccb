// ipc_descriptor.h: what names one exported tensor's bytes for the cuda_ipc
// transport. A plain value: the codec writes and parses it, the CUDA layer
// creates and opens it, and neither needs the other for that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tesscpp::cuda {

/// \brief What an importer needs to find the bytes of one exported tensor.
struct IpcDescriptor {
  static constexpr size_t kHandleSize = 64;  // CU_IPC_HANDLE_SIZE

  std::string device_uuid;  ///< as DeviceUuid()
  /// Empty tensors carry no handle (the wire form "<uuid>::0:0").
  bool has_handle = false;
  std::array<uint8_t, kHandleSize> handle{};
  int64_t offset = 0;           ///< tensor start - allocation base, in bytes
  int64_t allocation_size = 0;  ///< bytes of the allocation the handle names
};

}  // namespace tesscpp::cuda
