// device_memory.cc: device tensors from the pool, the memory manager that copies
// device buffers to the host, and copies from host to device.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "cuda/cuda_api.h"
#include "cuda/device_pool.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/buffer_pool.h"

namespace tesscpp::cuda {

using internal::DeviceGuard;
using internal::DevicePool;

namespace {

// One per device, so a copy needs no driver call to find its device.
class DeviceMemoryManager final : public MemoryManager {
 public:
  explicit DeviceMemoryManager(int ordinal) : ordinal_(ordinal) {}

  Result<Buffer> CopyToHost(const Buffer& bytes) const override {
    TESS_ASSIGN_OR_RETURN(Buffer host, BufferPool::Default()->Allocate(bytes.size()));
    if (bytes.empty()) return host;
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal_));
    // The writers' streams are unknown: wait for the whole device first.
    TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    TESS_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(host.data(), bytes.data(), static_cast<size_t>(bytes.size()), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  int ordinal_;
};

}  // namespace

const MemoryManager& DeviceMemory(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceMemoryManager>> managers;  // never freed: Buffers point here
  std::lock_guard lock(mutex);
  auto& manager = managers[ordinal];
  if (!manager) manager = std::make_unique<DeviceMemoryManager>(ordinal);
  return *manager;
}

namespace internal {

Result<Tensor> TensorInPool(DevicePool& pool, Dtype dtype, Shape shape, int ordinal) {
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  if (nbytes == 0) return Tensor::Make(dtype, std::move(shape), Buffer(), Device::CUDA(ordinal));
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> allocation, pool.Acquire(ordinal, nbytes));
  void* data = allocation->data();
  return Tensor::Make(dtype, std::move(shape),
                      Buffer::WrapDevice(data, nbytes, std::move(allocation), DeviceMemory(ordinal)),
                      Device::CUDA(ordinal));
}

}  // namespace internal

Result<Tensor> AllocateDevice(Dtype dtype, Shape shape, int ordinal) {
  TESS_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return Status::InvalidArgument("CUDA device ", ordinal, " does not exist (", count, " visible)");
  }
  return internal::TensorInPool(DevicePool::Imports(), dtype, std::move(shape), ordinal);
}

Result<Tensor> CopyToDevice(const Tensor& tensor, int ordinal) {
  if (!tensor.device().host_accessible()) {
    return Status::InvalidArgument("CopyToDevice expects a host tensor, got one on ",
                                   tensor.device().ToString());
  }
  TESS_ASSIGN_OR_RETURN(Tensor device, AllocateDevice(tensor.dtype(), tensor.shape(), ordinal));
  if (tensor.nbytes() == 0) return device;
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  TESS_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(device.data(), tensor.data(), static_cast<size_t>(tensor.nbytes()), cudaMemcpyHostToDevice));
  TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return device;
}

void SetPoolFraction(double fraction) {
  DevicePool::SetFraction(fraction < 0 ? 0 : fraction > 1 ? 1 : fraction);
}

}  // namespace tesscpp::cuda
