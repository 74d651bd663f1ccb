// ipc.cc: export by legacy IPC handle (with staging), import through a mapping cache.
#include <array>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <string>

#include "cuda/cuda_api.h"
#include "cuda/device_pool.h"
#include "tesscpp/cuda.h"
#include "tesscpp/cuda_ipc.h"

namespace tesscpp::cuda {

using internal::CudaStatus;
using internal::DeviceAllocation;
using internal::DeviceGuard;
using internal::DevicePool;

namespace {

// One cudaIpcOpenMemHandle mapping of a peer's allocation; closed on destruction.
class IpcMapping {
 public:
  static Result<std::shared_ptr<IpcMapping>> Open(int ordinal, const cudaIpcMemHandle_t& handle) {
    void* base = nullptr;
    TESS_CUDA_RETURN_IF_ERROR(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess));
    return std::shared_ptr<IpcMapping>(new IpcMapping(base, ordinal));
  }
  ~IpcMapping() {
    auto guard = DeviceGuard::Enter(ordinal_);
    internal::LogIfFailed(CudaStatus(cudaIpcCloseMemHandle(base_), "cudaIpcCloseMemHandle"));
  }
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  uint8_t* base() const { return static_cast<uint8_t*>(base_); }

 private:
  IpcMapping(void* base, int ordinal) : base_(base), ordinal_(ordinal) {}
  void* base_;
  int ordinal_;
};

// Mappings of the allocations seen last, so that a peer exporting the same
// buffers call after call (a caching allocator's segments, a staging pool) is
// mapped once. Keyed by the handle's bytes: a handle names one live
// allocation, and a freed-and-reallocated region gets a different handle, so a
// hit is always the allocation the descriptor means (which its exporter keeps
// alive for the length of the message). Bounded by count; evicted mappings
// close when the last import using them is done.
class MappingCache {
 public:
  static constexpr size_t kMaxMappings = 64;

  static MappingCache& Instance() {
    static auto* cache = new MappingCache();  // leaked: mappings may be released at exit
    return *cache;
  }

  Result<std::shared_ptr<IpcMapping>> Get(int ordinal, const cudaIpcMemHandle_t& handle) {
    std::string key(reinterpret_cast<const char*>(&handle), sizeof handle);
    key += std::to_string(ordinal);
    std::shared_ptr<IpcMapping> evicted;  // closed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        return it->second;
      }
    }
    TESS_ASSIGN_OR_RETURN(std::shared_ptr<IpcMapping> mapping, IpcMapping::Open(ordinal, handle));
    entries_.emplace_front(std::move(key), mapping);
    if (entries_.size() > kMaxMappings) {
      evicted = std::move(entries_.back().second);
      entries_.pop_back();
    }
    return mapping;
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<IpcMapping>>> entries_;
};

// The stream imports copy on, one per device (non-blocking: the copy waits
// for nothing else the process runs, and nothing waits for it).
Result<cudaStream_t> ImportStream(int ordinal) {
  static std::mutex mutex;
  static auto* streams = new std::array<internal::CudaStream, 64>();  // leaked: used until exit
  if (ordinal >= static_cast<int>(streams->size())) return Status::InvalidArgument("too many CUDA devices");
  std::lock_guard<std::mutex> lock(mutex);
  internal::CudaStream& stream = (*streams)[static_cast<size_t>(ordinal)];
  if (stream.get() == nullptr) {
    TESS_ASSIGN_OR_RETURN(stream, internal::CreateStream());
  }
  return stream.get();
}

// The base, size and handle of the cudaMalloc allocation holding `data`;
// nullopt for memory legacy IPC cannot name (pools, VMM, managed).
Result<std::optional<IpcDescriptor>> DescribeAllocation(void* data) {
  TESS_ASSIGN_OR_RETURN(const internal::DriverApi* driver, internal::Driver());
  const auto pointer = reinterpret_cast<CUdeviceptr>(data);
  int capable = 0;
  // Asking first avoids the failing cudaIpcGetMemHandle on such memory.
  if (driver->pointer_get_attribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, pointer) ==
          CUDA_SUCCESS &&
      capable == 0) {
    return std::optional<IpcDescriptor>();
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  TESS_RETURN_IF_ERROR(
      internal::DriverStatus(driver->mem_get_address_range(&base, &size, pointer), "cuMemGetAddressRange"));
  cudaIpcMemHandle_t handle;
  if (!CudaStatus(cudaIpcGetMemHandle(&handle, internal::PointerFromAddress(base)), "cudaIpcGetMemHandle")
           .ok()) {
    return std::optional<IpcDescriptor>();
  }
  IpcDescriptor descriptor;
  descriptor.has_handle = true;
  std::memcpy(descriptor.handle.data(), &handle, sizeof handle);
  descriptor.offset = static_cast<int64_t>(pointer - base);
  descriptor.allocation_size = static_cast<int64_t>(size);
  return std::optional<IpcDescriptor>(descriptor);
}

Result<IpcDescriptor> StageForExport(const Tensor& tensor, int ordinal,
                                     std::vector<std::shared_ptr<void>>& pins) {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> staging,
                        DevicePool::Staging().Acquire(ordinal, tensor.nbytes()));
  // The writers' streams are unknown, and the copy runs on the legacy stream.
  TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  TESS_CUDA_RETURN_IF_ERROR(cudaMemcpy(staging->data(), tensor.data(), static_cast<size_t>(tensor.nbytes()),
                                       cudaMemcpyDeviceToDevice));
  if (!staging->ipc_handle) {
    cudaIpcMemHandle_t handle;
    TESS_CUDA_RETURN_IF_ERROR(cudaIpcGetMemHandle(&handle, staging->data()));
    staging->ipc_handle = handle;
  }
  IpcDescriptor descriptor;
  descriptor.has_handle = true;
  std::memcpy(descriptor.handle.data(), &*staging->ipc_handle, IpcDescriptor::kHandleSize);
  descriptor.allocation_size = tensor.nbytes();
  pins.push_back(std::move(staging));
  return descriptor;
}

}  // namespace

Result<IpcDescriptor> ExportIpc(const Tensor& tensor, std::vector<std::shared_ptr<void>>& pins) {
  TESS_ASSIGN_OR_RETURN(int ordinal, internal::TensorOrdinal(tensor));
  TESS_ASSIGN_OR_RETURN(std::string uuid, DeviceUuid(ordinal));
  if (tensor.nbytes() == 0) {
    IpcDescriptor empty;
    empty.device_uuid = std::move(uuid);
    return empty;
  }
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  TESS_ASSIGN_OR_RETURN(std::optional<IpcDescriptor> direct, DescribeAllocation(tensor.data()));
  IpcDescriptor descriptor;
  if (direct) {
    descriptor = *std::move(direct);
    pins.push_back(tensor.buffer().owner());
  } else {
    TESS_ASSIGN_OR_RETURN(descriptor, StageForExport(tensor, ordinal, pins));
  }
  descriptor.device_uuid = std::move(uuid);
  // Every write to the exported bytes must be finished before the peer reads.
  TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return descriptor;
}

Result<Tensor> ImportIpc(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape) {
  TESS_ASSIGN_OR_RETURN(int ordinal, OrdinalOfUuid(descriptor.device_uuid));
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  if (!descriptor.has_handle || nbytes == 0) {
    if (nbytes != 0) {
      return Status::InvalidArgument("cuda_ipc descriptor has no handle, but the array of shape ",
                                     shape.ToString(), " and dtype ", DtypeName(dtype), " is not empty");
    }
    return internal::TensorInPool(DevicePool::Imports(), dtype, shape, ordinal);
  }
  if (descriptor.offset < 0 || descriptor.allocation_size < 0 ||
      descriptor.offset > descriptor.allocation_size - nbytes) {
    return Status::InvalidArgument("the cuda_ipc descriptor names bytes [", descriptor.offset, ", ",
                                   descriptor.offset, " + ", nbytes, ") of an allocation of ",
                                   descriptor.allocation_size, " bytes");
  }
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, descriptor.handle.data(), sizeof handle);
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<IpcMapping> mapping, MappingCache::Instance().Get(ordinal, handle));
  TESS_ASSIGN_OR_RETURN(Tensor tensor, internal::TensorInPool(DevicePool::Imports(), dtype, shape, ordinal));
  TESS_ASSIGN_OR_RETURN(cudaStream_t stream, ImportStream(ordinal));
  TESS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(tensor.data(), mapping->base() + descriptor.offset,
                                            static_cast<size_t>(nbytes), cudaMemcpyDeviceToDevice, stream));
  TESS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return tensor;
}

}  // namespace tesscpp::cuda
