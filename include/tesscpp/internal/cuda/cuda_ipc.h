// cuda_ipc.h: device tensors across a process boundary by legacy CUDA IPC handle.
//
// The exporter names the whole allocation that holds the tensor (the handle of
// its base) plus the tensor's offset in it, and keeps the memory alive and
// unchanged until the importer is done (the caller holds `pins` that long).
// The importer maps the allocation and either copies the bytes into memory it
// owns (what tesseract-core 1.15 does) or borrows them where they are. VMM
// memory (cuMemCreate: PyTorch's expandable segments) goes by reference to a
// peer that maps it (tesscpp's cuda_vmm extension, docs/gpu-transport-protocol.md 13);
// other memory that legacy IPC cannot name (stream-ordered pools, managed) is
// first copied into a pooled cudaMalloc buffer. This is what the cuda_ipc
// wire encoding carries.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/cuda/ipc_descriptor.h"
#include "tesscpp/result.h"
#include "tesscpp/tensor.h"

namespace tesscpp::cuda {

/// \brief How an export makes sure the peer reads finished bytes.
enum class ExportOrdering {
  /// The device is synchronised before the descriptor is returned (the
  /// producer's streams are unknown), as tesseract-core 1.15 does.
  kSynchronised,
  /// The tensor's writers are ordered before the legacy default stream, and
  /// the caller records an IpcEvent there once everything is exported, which
  /// the peer waits for (tesscpp's IPC-event extension): no host wait here.
  kLegacyStream,
};

/// \brief Whether the peer maps VMM allocations by file descriptor (it
/// offered or accepted the cuda_vmm extension and can reach this process).
enum class VmmPeer {
  kCannot,       ///< a tesseract-core peer, or one that refused: VMM memory is staged (with one warning)
  kNotYetKnown,  ///< before the peer has answered: staged silently
  kCan,          ///< VMM memory goes by reference
};

/// \brief Exports a CUDA tensor. Whatever the importer may read is appended to
/// `pins` (the tensor's buffer, or the staging buffer it was copied to); the
/// caller keeps them until the importer has finished.
Result<IpcDescriptor> ExportIpc(const Tensor& tensor, std::vector<std::shared_ptr<void>>& pins,
                                ExportOrdering ordering = ExportOrdering::kSynchronised,
                                VmmPeer vmm_peer = VmmPeer::kCannot);

/// \brief This process's cuda_vmm endpoint ("<pid>.<nonce>": an abstract Unix
/// socket that hands the VMM allocations it exported to peers as POSIX file
/// descriptors), started on first use. nullopt where CUDA is unavailable, the
/// socket cannot be opened, or TESSCPP_CUDA_VMM=0 turned the extension off.
std::optional<std::string> VmmEndpoint();

/// \brief Whether a peer's cuda_vmm endpoint can be reached from here (the
/// two processes share a network namespace and the peer listens). Answers
/// are remembered per endpoint.
bool VmmPeerReachable(std::string_view endpoint);

/// \brief What this process's GPU transport did so far (monotonic counts):
/// the evidence that a path copies or not.
struct TransportCounters {
  uint64_t legacy_exports = 0;    ///< tensors named by a legacy IPC handle
  uint64_t vmm_exports = 0;       ///< tensors named by their VMM allocations
  uint64_t staged_exports = 0;    ///< tensors copied into a staging buffer first
  uint64_t vmm_fds_exported = 0;  ///< allocations turned into a file descriptor for a peer
  uint64_t vmm_maps_opened = 0;   ///< peers' VMM tensors mapped here
  uint64_t vmm_maps_reused = 0;   ///< peers' VMM tensors found mapped already
};
TransportCounters GetTransportCounters();

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

/// \brief A point in one process's GPU work that another process can wait
/// for: a CUDA interprocess event of a device (docs/gpu-transport-protocol.md 12).
struct IpcEvent {
  std::string device_uuid;  ///< as DeviceUuid()
  std::array<uint8_t, IpcDescriptor::kHandleSize> handle{};

  bool operator==(const IpcEvent&) const = default;
};

/// \brief Marks the work queued so far on the legacy default stream of device
/// `ordinal` (and so on every blocking stream) with this process's event of
/// that device, and returns its handle. The one event per device is recorded
/// again each time: a peer that waits after a later record waits for the later
/// point, never an earlier one.
Result<IpcEvent> RecordIpcEvent(int ordinal);

/// \brief How WaitIpcEvent waits.
enum class IpcEventWait {
  kOnLegacyStream,  ///< the legacy default stream waits, on the GPU
  kOnHost,          ///< the calling thread blocks until the event completes
};

/// \brief Waits for a peer's event. Opened handles are kept (the 64 seen last).
Status WaitIpcEvent(const IpcEvent& event, IpcEventWait how);

}  // namespace tesscpp::cuda
