// cuda_api.h: the CUDA calls the cuda module makes, with Status errors (internal).
//
// Only the runtime API is linked (statically, so libtesscpp loads on machines
// without CUDA); the few driver calls needed (allocation ranges, UUIDs, pointer
// attributes) are looked up through cudaGetDriverEntryPointByVersion.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// \brief Reports a failure that cannot be returned (in a destructor) on stderr.
void LogIfFailed(const Status& status);

/// \brief Reports a failed release in a destructor, as LogIfFailed, except the
/// code that says CUDA has already shut down (CUDA_ERROR_DEINITIALIZED,
/// cudaErrorCudartUnloading): owners that outlive main (leaked caches, Python
/// objects freed as the interpreter exits) may go after CUDA's own exit
/// handler, which has freed and unmapped their memory with the context.
void LogReleaseFailure(CUresult result, std::string_view call);
void LogReleaseFailure(cudaError_t error, std::string_view call);

/// \brief CUDA names streams and memory by integers at the edges (CAI, DLPack,
/// driver pointers); these turn them back into what the runtime API takes.
inline cudaStream_t StreamFromInteger(uintptr_t stream) {
  return reinterpret_cast<cudaStream_t>(stream);  // NOLINT(performance-no-int-to-ptr)
}
inline void* PointerFromAddress(CUdeviceptr address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

/// \brief A move-only owner of a CUDA handle, released by `Release` when it
/// goes (streams, events, pinned host memory).
template <typename Handle, cudaError_t (*Release)(Handle)>
class CudaResource {
 public:
  CudaResource() = default;
  explicit CudaResource(Handle handle) : handle_(handle) {}
  CudaResource(CudaResource&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CudaResource& operator=(CudaResource&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  CudaResource(const CudaResource&) = delete;
  CudaResource& operator=(const CudaResource&) = delete;
  ~CudaResource() { Reset(); }

  Handle get() const { return handle_; }

 private:
  void Reset() {
    if (handle_ != nullptr) LogReleaseFailure(Release(handle_), "releasing a CUDA stream, event or buffer");
    handle_ = nullptr;
  }
  Handle handle_ = nullptr;
};

using CudaStream = CudaResource<cudaStream_t, cudaStreamDestroy>;
using CudaEvent = CudaResource<cudaEvent_t, cudaEventDestroy>;
using PinnedBuffer = CudaResource<void*, cudaFreeHost>;

/// \brief A non-blocking stream (it waits for nothing else the process runs).
Result<CudaStream> CreateStream();
/// \brief An event without timing (the cheap kind, for ordering only), with
/// `extra_flags` (cudaEventInterprocess for one other processes may wait for).
Result<CudaEvent> CreateEvent(unsigned int extra_flags = 0);
/// \brief `size` bytes of page-locked host memory.
Result<PinnedBuffer> AllocatePinned(int64_t size);

/// \brief The driver entry points used here, resolved once.
struct DriverApi {
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*pointer_get_attribute)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
  CUresult (*pointer_get_attributes)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
  // Virtual memory management, for the cuda_vmm extension (vmm.cc).
  CUresult (*mem_retain_allocation_handle)(CUmemGenericAllocationHandle*, void*) = nullptr;
  CUresult (*mem_export_to_shareable_handle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                                             unsigned long long) = nullptr;  // NOLINT(google-runtime-int)
  CUresult (*mem_import_from_shareable_handle)(CUmemGenericAllocationHandle*, void*,
                                               CUmemAllocationHandleType) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                                  unsigned long long) = nullptr;  // NOLINT(google-runtime-int)
  CUresult (*mem_address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                      unsigned long long) = nullptr;  // NOLINT(google-runtime-int)
  CUresult (*mem_unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
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

/// \brief A device UUID's 16 bytes as tesseract-core writes them:
/// str(uuid.UUID(bytes=raw)), 8-4-4-4-12 lowercase hex, no "GPU-" prefix.
std::string FormatUuid(const CUuuid& uuid);

/// \brief kUnavailable: the array's GPU `uuid` is out of this process's reach
/// (`why`), and how to give access; tesseract-core's wording.
Status GpuOutOfReach(std::string_view uuid, std::string_view why);

/// \brief The ordinal under which `uuids` (a process's visible devices, by
/// ordinal) lists `uuid`: what names a GPU across processes whose
/// CUDA_VISIBLE_DEVICES differ. kUnavailable with tesseract-core's text when
/// the process cannot see it.
Result<int> FindOrdinal(const std::vector<std::string>& uuids, std::string_view uuid);

/// \brief The ordinal of a CUDA tensor's device, checked against the visible ones.
Result<int> TensorOrdinal(const Tensor& tensor);
/// \brief TensorOrdinal for memory of `device` (the same checks and messages).
Result<int> DeviceOrdinal(Device device);

}  // namespace tesscpp::cuda::internal
