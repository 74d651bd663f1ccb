// cuda_api.h: the CUDA calls the cuda module makes, with Status errors (internal).
//
// Only the runtime API is linked (statically, so libtesscpp loads on machines
// without CUDA); the few driver calls needed (allocation ranges, UUIDs, pointer
// attributes) are looked up through cudaGetDriverEntryPointByVersion.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string_view>

#include "tesscpp/result.h"
#include "tesscpp/tensor.h"

namespace tesscpp::cuda::internal {

/// \brief OK for cudaSuccess; else "<call> failed: <cudaGetErrorString>" (the
/// wording of tesseract-core's errors). Clears the runtime's last error, so an
/// expected failure does not surface in the next kernel launch of whoever
/// shares the process (tesseract-jax met that with XLA).
Status CudaStatus(cudaError_t error, std::string_view call);

/// \brief The same for driver calls ("<call> failed with error code N").
Status DriverStatus(CUresult result, std::string_view call);

#define TESS_CUDA_RETURN_IF_ERROR(call) \
  TESS_RETURN_IF_ERROR(::tesscpp::cuda::internal::CudaStatus((call), #call))

/// \brief The driver entry points used here, resolved once.
struct DriverApi {
  CUresult (*mem_get_address_range)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*pointer_get_attribute)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
};

/// \brief The entry points, after CheckAvailable() succeeded.
Result<const DriverApi*> Driver();

/// \brief Makes `ordinal` the calling thread's current device (binding its
/// primary context on a fresh thread) and restores the previous one on exit.
class DeviceGuard {
 public:
  static Result<DeviceGuard> Enter(int ordinal);
  DeviceGuard(DeviceGuard&& other) noexcept : previous_(other.previous_) { other.previous_ = -1; }
  DeviceGuard& operator=(DeviceGuard&&) = delete;
  DeviceGuard(const DeviceGuard&) = delete;
  ~DeviceGuard();

 private:
  explicit DeviceGuard(int previous) : previous_(previous) {}
  int previous_;
};

/// \brief The ordinal of a CUDA tensor's device, checked against the visible ones.
Result<int> TensorOrdinal(const Tensor& tensor);

}  // namespace tesscpp::cuda::internal
