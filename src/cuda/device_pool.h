// device_pool.h: cudaMalloc buffers, owned and pooled (internal).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "cuda/cuda_api.h"

namespace tesscpp::cuda::internal {

/// \brief One cudaMalloc allocation; freed on destruction. Remembers its IPC
/// handle once taken (handles of a live allocation never change).
class DeviceAllocation {
 public:
  static Result<std::unique_ptr<DeviceAllocation>> Make(int ordinal, int64_t size);
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  int64_t size() const { return size_; }
  int ordinal() const { return ordinal_; }
  std::optional<cudaIpcMemHandle_t> ipc_handle;

 private:
  DeviceAllocation(void* data, int64_t size, int ordinal) : data_(data), size_(size), ordinal_(ordinal) {}
  void* data_;
  int64_t size_;
  int ordinal_;
};

/// \brief Idle allocations kept for reuse, by exact (device, size), at most
/// `fraction / 2` of each device's memory (least recently released go first),
/// as tesseract-core's staging and decode pools. Allocations come back through
/// the shared_ptr's deleter. Thread-safe.
class DevicePool {
 public:
  /// \brief The pool for export staging and the one for import destinations.
  static DevicePool& Staging();
  static DevicePool& Imports();
  /// \brief Sets the fraction of both pools (checked by the caller).
  static void SetFraction(double fraction);

  /// \brief An allocation of exactly `size` bytes on `ordinal`. A reused one is
  /// handed out after a device synchronisation, since kernels of its previous
  /// user may still be reading it.
  Result<std::shared_ptr<DeviceAllocation>> Acquire(int ordinal, int64_t size);

 private:
  void Release(std::unique_ptr<DeviceAllocation> allocation);
  int64_t CapFor(int ordinal);

  std::mutex mutex_;
  std::list<std::unique_ptr<DeviceAllocation>> idle_;  // oldest release first
  std::map<int, int64_t> idle_bytes_;                  // by ordinal
  std::map<int, int64_t> caps_;                        // by ordinal, computed once
};

}  // namespace tesscpp::cuda::internal

namespace tesscpp::cuda::internal {

/// \brief A C-contiguous device tensor whose memory comes from `pool` (empty
/// shapes get no memory).
Result<Tensor> TensorInPool(DevicePool& pool, Dtype dtype, Shape shape, int ordinal);

}  // namespace tesscpp::cuda::internal
