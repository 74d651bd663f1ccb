// device_memory.cc: device tensors from the pool, the memory manager that copies
// CUDA memory to the host, and copies between host and device or on a device.
#include <cstring>

#include "core/memory_manager.h"
#include "cuda/cuda_api.h"
#include "cuda/device_pool.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::cuda {

using internal::DeviceGuard;
using internal::DevicePool;

namespace {

// The host copies of CUDA memory, whichever way a tensor over it was made
// (core/memory_manager.h): registered as libtesscpp loads.
class CudaMemory final : public core::MemoryManager {
 public:
  CudaMemory() { core::SetMemoryManager(DeviceType::kCUDA, this); }
  ~CudaMemory() override { core::SetMemoryManager(DeviceType::kCUDA, nullptr); }

  Result<Buffer> CopyToHost(const Buffer& bytes, Device device) const override {
    TESS_ASSIGN_OR_RETURN(int ordinal, internal::DeviceOrdinal(device));
    TESS_ASSIGN_OR_RETURN(Buffer host, BufferPool::Default()->Allocate(bytes.size()));
    if (bytes.empty()) return host;
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
    // The writers' streams are unknown: wait for the whole device first.
    TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    TESS_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(host.data(), bytes.data(), static_cast<size_t>(bytes.size()), cudaMemcpyDeviceToHost));
    return host;
  }
};

const CudaMemory kCudaMemory;

}  // namespace

namespace internal {

Result<Tensor> TensorInPool(DevicePool& pool, Dtype dtype, Shape shape, int ordinal) {
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  if (nbytes == 0) return Tensor::Make(dtype, std::move(shape), Buffer(), Device::CUDA(ordinal));
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> allocation, pool.Acquire(ordinal, nbytes));
  void* data = allocation->data();
  return Tensor::Make(dtype, std::move(shape), Buffer::Wrap(data, nbytes, std::move(allocation)),
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

Status CopyOnDeviceAsync(void* destination, const void* source, int64_t nbytes, int ordinal,
                         uintptr_t stream) {
  if (nbytes == 0) return CheckAvailable();
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  return internal::CudaStatus(cudaMemcpyAsync(destination, source, static_cast<size_t>(nbytes),
                                              cudaMemcpyDeviceToDevice, internal::StreamFromInteger(stream)),
                              "cudaMemcpyAsync");
}

namespace {

// A copy in `stream`'s order that the calling thread waits for.
Status CopyAndWait(void* destination, const void* source, int64_t nbytes, cudaMemcpyKind kind, int ordinal,
                   uintptr_t stream) {
  if (nbytes == 0) return CheckAvailable();
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  const cudaStream_t on = internal::StreamFromInteger(stream);
  TESS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(destination, source, static_cast<size_t>(nbytes), kind, on));
  return internal::CudaStatus(cudaStreamSynchronize(on), "cudaStreamSynchronize");
}

}  // namespace

Status CopyToHostAfterStream(void* destination, const void* source, int64_t nbytes, int ordinal,
                             uintptr_t stream) {
  return CopyAndWait(destination, source, nbytes, cudaMemcpyDeviceToHost, ordinal, stream);
}

Status CopyToDeviceOnStream(void* destination, const void* source, int64_t nbytes, int ordinal,
                            uintptr_t stream) {
  return CopyAndWait(destination, source, nbytes, cudaMemcpyHostToDevice, ordinal, stream);
}

void SetPoolFraction(double fraction) {
  DevicePool::SetFraction(fraction < 0 ? 0 : fraction > 1 ? 1 : fraction);
}

}  // namespace tesscpp::cuda
