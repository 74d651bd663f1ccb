// device_pool.cc: DeviceAllocation and the two IPC pools.
#include "cuda/device_pool.h"

#include <atomic>

namespace tesscpp::cuda::internal {
namespace {

std::atomic<double> pool_fraction{0.25};

}  // namespace

Result<std::unique_ptr<DeviceAllocation>> DeviceAllocation::Make(int ordinal, int64_t size) {
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  void* data = nullptr;
  const cudaError_t error = cudaMalloc(&data, static_cast<size_t>(size));
  if (error == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return Status::ResourceExhausted("cudaMalloc of ", size, " bytes on cuda:", ordinal,
                                     " failed: out of memory");
  }
  TESS_RETURN_IF_ERROR(CudaStatus(error, "cudaMalloc"));
  return std::unique_ptr<DeviceAllocation>(new DeviceAllocation(data, size, ordinal));
}

DeviceAllocation::~DeviceAllocation() {
  // Freeing needs the allocation's device current on this thread.
  auto guard = DeviceGuard::Enter(ordinal_);
  LogReleaseFailure(cudaFree(data_), "cudaFree");
}

DevicePool& DevicePool::Staging() {
  static auto* pool = new DevicePool();  // leaked: allocations may be released at exit
  return *pool;
}

DevicePool& DevicePool::Imports() {
  static auto* pool = new DevicePool();
  return *pool;
}

void DevicePool::SetFraction(double fraction) { pool_fraction = fraction; }

int64_t DevicePool::CapFor(int ordinal) {
  auto it = caps_.find(ordinal);
  if (it != caps_.end()) return it->second;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  auto guard = DeviceGuard::Enter(ordinal);
  if (!guard.ok() || !CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo").ok()) return 0;
  const auto cap = static_cast<int64_t>(static_cast<double>(total_bytes) * pool_fraction / 2);
  caps_.emplace(ordinal, cap);
  return cap;
}

Result<std::shared_ptr<DeviceAllocation>> DevicePool::Acquire(int ordinal, int64_t size) {
  std::unique_ptr<DeviceAllocation> allocation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->ordinal() == ordinal && (*it)->size() == size) {
        allocation = std::move(*it);
        idle_.erase(it);
        idle_bytes_[ordinal] -= size;
        break;
      }
    }
  }
  if (allocation) {
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
    TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  } else {
    TESS_ASSIGN_OR_RETURN(allocation, DeviceAllocation::Make(ordinal, size));
  }
  DevicePool* pool = this;
  return std::shared_ptr<DeviceAllocation>(allocation.release(), [pool](DeviceAllocation* returned) {
    pool->Release(std::unique_ptr<DeviceAllocation>(returned));
  });
}

void DevicePool::Release(std::unique_ptr<DeviceAllocation> allocation) {
  std::list<std::unique_ptr<DeviceAllocation>> evicted;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int ordinal = allocation->ordinal();
    const int64_t cap = CapFor(ordinal);
    if (allocation->size() > cap) return;  // too big to keep: freed here
    idle_bytes_[ordinal] += allocation->size();
    idle_.push_back(std::move(allocation));
    for (auto it = idle_.begin(); idle_bytes_[ordinal] > cap && it != idle_.end();) {
      if ((*it)->ordinal() != ordinal) {
        ++it;
        continue;
      }
      idle_bytes_[ordinal] -= (*it)->size();
      auto next = std::next(it);
      evicted.splice(evicted.end(), idle_, it);
      it = next;
    }
  }
}

}  // namespace tesscpp::cuda::internal
