// device_memory.cc: device tensors from the pool, and copies between host and device.
#include <cstring>

#include "cuda/cuda_api.h"
#include "cuda/device_pool.h"
#include "tesscpp/buffer_pool.h"
#include "tesscpp/cuda.h"

namespace tesscpp::cuda {

using internal::DeviceGuard;
using internal::DevicePool;

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

Result<Tensor> CopyToHost(const Tensor& tensor) {
  if (tensor.device().host_accessible()) return tensor;
  TESS_ASSIGN_OR_RETURN(int ordinal, internal::TensorOrdinal(tensor));
  TESS_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(tensor.dtype(), tensor.shape()));
  if (tensor.nbytes() == 0) return host;
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  // The writers' streams are unknown: wait for the whole device first.
  TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  TESS_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(host.data(), tensor.data(), static_cast<size_t>(tensor.nbytes()), cudaMemcpyDeviceToHost));
  return host;
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
