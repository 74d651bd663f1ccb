// cuda_ipc.h: device tensors across a process boundary by legacy CUDA IPC handle.
//
// The exporter names the whole allocation that holds the tensor (the handle of
// its base) plus the tensor's offset in it, and keeps the memory alive and
// unchanged until the importer is done (the caller holds `pins` that long).
// The importer maps the allocation and either copies the bytes into memory it
// owns (what tesseract-core 1.15 does) or borrows them where they are. Memory that legacy IPC cannot name
// (stream-ordered pools, VMM, managed) is first copied into a pooled cudaMalloc buffer. This is what the
// cuda_ipc wire encoding carries (protocol.md 9, docs/gpu-transport.md).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/tensor.h"

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

/// \brief Exports a CUDA tensor. Whatever the importer may read is appended to
/// `pins` (the tensor's buffer, or the staging buffer it was copied to); the
/// caller keeps them until the importer has finished. All device work is
/// complete when this returns (the producer's streams are unknown, so the
/// device is synchronised, as tesseract-core 1.15 does).
Result<IpcDescriptor> ExportIpc(const Tensor& tensor, std::vector<std::shared_ptr<void>>& pins);

/// \brief A device tensor owning a copy of the `dtype`/`shape` bytes a peer
/// exported. Checks the handle against the allocation size it came with.
/// Mappings of recently seen allocations are kept (bounded) and reused.
Result<Tensor> ImportIpc(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape);

/// \brief A device tensor that reads the exported bytes in place (no copy, no
/// device work). It keeps the mapping open, and `lease` alive, until its last
/// copy is gone. The exporter must leave the memory untouched that long, and
/// the borrower must have finished its device work on the tensor before it
/// tells the exporter it is done (a server: before its answer leaves; a
/// client: before it acknowledges). Same checks as ImportIpc.
Result<Tensor> BorrowIpc(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape,
                         std::shared_ptr<void> lease = nullptr);

}  // namespace tesscpp::cuda
