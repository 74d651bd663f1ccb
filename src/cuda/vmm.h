// vmm.h: tesscpp's cuda_vmm extension, VMM allocations by reference between
// processes (internal; docs/gpu-transport-protocol.md 13).
//
// Memory made with cuMemCreate (PyTorch's expandable segments, JAX's and any
// VMM allocator) has no legacy IPC handle. If its allocation allows POSIX
// file-descriptor export, the exporter describes the tensor by the physical
// allocations under it (the driver's process-wide unique block ids) and hands
// each one out as a file descriptor when a peer asks, over an abstract Unix
// socket (SCM_RIGHTS). The importer maps them side by side into one address
// range and keeps that mapping for later messages naming the same blocks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tesscpp/internal/cuda/ipc_descriptor.h"
#include "tesscpp/result.h"

namespace tesscpp::cuda::internal {

/// \brief The transport's counts (what TransportCounters reports).
struct Counters {
  std::atomic<uint64_t> legacy_exports{0};
  std::atomic<uint64_t> vmm_exports{0};
  std::atomic<uint64_t> staged_exports{0};
  std::atomic<uint64_t> vmm_fds_exported{0};
  std::atomic<uint64_t> vmm_maps_opened{0};
  std::atomic<uint64_t> vmm_maps_reused{0};
};
Counters& TransportCountersOf();

/// \brief Describes the `nbytes` at `data` (device `ordinal`) by its VMM
/// allocations, registered with this process's endpoint so that a peer can
/// ask for them; `device_uuid` is left to the caller. nullopt, with the
/// reason in `why_not`, for memory that is not VMM or whose allocations
/// cannot be exported as file descriptors.
Result<std::optional<IpcDescriptor>> DescribeVmm(const void* data, int64_t nbytes, int ordinal,
                                                 std::string* why_not);

/// \brief A peer's VMM tensor mapped here: its first byte, and what keeps
/// the mapping (one address range for all its allocations) alive.
struct VmmBytes {
  std::shared_ptr<void> mapping;
  uint8_t* data = nullptr;
};

/// \brief Maps what a cuda_vmm descriptor names on device `ordinal`, asking
/// its exporter for the allocations unless the same ones are mapped already
/// (a bounded cache; entries of exporters that are gone are dropped).
Result<VmmBytes> MapVmm(const IpcDescriptor& descriptor, int ordinal);

}  // namespace tesscpp::cuda::internal
