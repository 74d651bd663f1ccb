// ipc_descriptor.h: what names one exported tensor's bytes for the cuda_ipc
// transport. A plain value: the codec writes and parses it, the CUDA layer
// creates and opens it, and neither needs the other for that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tesscpp::cuda {

/// \brief One physical allocation under a tensor in VMM memory: its
/// exporter's process-wide unique id for it, and the bytes mapped from its start.
struct VmmPiece {
  uint64_t block = 0;
  int64_t size = 0;

  bool operator==(const VmmPiece&) const = default;
};

/// \brief What an importer needs to find the bytes of one exported tensor:
/// a legacy IPC handle, or (tesscpp's cuda_vmm extension, docs/gpu-transport-protocol.md
/// 13) the VMM allocations under it, which the exporter hands out as POSIX
/// file descriptors on request.
struct IpcDescriptor {
  static constexpr size_t kHandleSize = 64;  // CU_IPC_HANDLE_SIZE

  std::string device_uuid;  ///< as DeviceUuid()
  /// Empty tensors carry no handle (the wire form "<uuid>::0:0").
  bool has_handle = false;
  std::array<uint8_t, kHandleSize> handle{};
  int64_t offset = 0;           ///< tensor start - allocation base, in bytes
  int64_t allocation_size = 0;  ///< bytes of the allocation the handle names

  /// cuda_vmm only (then has_handle is false): "<pid>.<nonce>", the exporter's
  /// abstract socket that hands out the pieces' descriptors; the token that
  /// proves a request comes from a reader of this message; the pieces in
  /// address order. `offset` is then from the first piece's start, and
  /// `allocation_size` the sum of their sizes.
  std::string vmm_exporter;
  std::string vmm_token;
  std::vector<VmmPiece> vmm_pieces;

  bool is_vmm() const { return !vmm_exporter.empty(); }
};

}  // namespace tesscpp::cuda
