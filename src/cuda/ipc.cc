// ipc.cc: export by legacy IPC handle (with staging), import through a mapping cache.
#include "tesscpp/internal/cuda/cuda_ipc.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "cuda/cuda_api.h"
#include "cuda/device_pool.h"
#include "cuda/peer_ranges.h"
#include "cuda/recent_cache.h"
#include "cuda/vmm.h"
#include "tesscpp/cuda.h"

namespace tesscpp::cuda {

using internal::CudaStatus;
using internal::DeviceAllocation;
using internal::DeviceGuard;
using internal::DevicePool;
using internal::RecentCache;

namespace {

// One cudaIpcOpenMemHandle mapping of a peer's allocation; closed on destruction.
class IpcMapping {
 public:
  // `size`: the allocation's size as its exporter gave it.
  static Result<std::shared_ptr<IpcMapping>> Open(int ordinal, const cudaIpcMemHandle_t& handle,
                                                  size_t size) {
    void* base = nullptr;
    TESS_CUDA_RETURN_IF_ERROR(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess));
    auto mapping = std::shared_ptr<IpcMapping>(new IpcMapping(base, ordinal));
    internal::PeerRanges::Add(reinterpret_cast<uintptr_t>(base), size);
    return mapping;
  }
  ~IpcMapping() {
    internal::PeerRanges::Remove(reinterpret_cast<uintptr_t>(base_));
    auto guard = DeviceGuard::Enter(ordinal_);
    internal::LogReleaseFailure(cudaIpcCloseMemHandle(base_), "cudaIpcCloseMemHandle");
  }
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  uint8_t* base() const { return static_cast<uint8_t*>(base_); }

 private:
  IpcMapping(void* base, int ordinal) : base_(base), ordinal_(ordinal) {}
  void* base_;
  int ordinal_;
};

// The key of a legacy handle opened on a device: a memory handle names one
// live allocation, and a freed-and-reallocated region gets a different handle.
template <typename Handle>
std::string HandleKey(int ordinal, const Handle& handle) {
  std::string key(reinterpret_cast<const char*>(&handle), sizeof handle);
  return key + std::to_string(ordinal);
}

RecentCache<IpcMapping>& Mappings() {
  static auto* mappings = new RecentCache<IpcMapping>(64);  // leaked: mappings may be released at exit
  return *mappings;
}

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

// Handles of this process's allocations exported before, by the driver's
// buffer id ("a process-wide unique ID for an allocated memory region": a
// freed and reallocated region gets a new one, so a hit is never stale).
// Calls that export the same buffers again skip cudaIpcGetMemHandle, which
// costs a driver round trip. Bounded; emptied when full.
class HandleCache {
 public:
  struct Entry {
    CUdeviceptr base = 0;
    size_t size = 0;
    cudaIpcMemHandle_t handle{};
  };
  static constexpr size_t kMaxEntries = 1024;

  static HandleCache& Instance() {
    static auto* cache = new HandleCache();  // leaked: exports may run at exit
    return *cache;
  }
  std::optional<Entry> Find(uint64_t buffer_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(buffer_id);
    return it == entries_.end() ? std::nullopt : std::optional<Entry>(it->second);
  }
  void Add(uint64_t buffer_id, const Entry& entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_[buffer_id] = entry;
  }

 private:
  std::mutex mutex_;
  std::map<uint64_t, Entry> entries_;
};

// The base, size and handle of the cudaMalloc allocation holding `data`;
// nullopt for memory legacy IPC cannot name (pools, VMM, managed) or that
// is a peer's.
Result<std::optional<IpcDescriptor>> DescribeAllocation(void* data) {
  TESS_ASSIGN_OR_RETURN(const internal::DriverApi* driver, internal::Driver());
  const auto pointer = reinterpret_cast<CUdeviceptr>(data);
  if (internal::PeerRanges::Contains(data)) return std::optional<IpcDescriptor>();
  // One driver call for all four; asking for the capability first avoids the
  // failing cudaIpcGetMemHandle on memory that has none.
  int capable = 0;
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned long long buffer_id = 0;  // NOLINT(google-runtime-int): the driver's type
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void* values[] = {&capable, &base, &size, &buffer_id};
  TESS_RETURN_IF_ERROR(internal::DriverStatus(driver->pointer_get_attributes(4, attributes, values, pointer),
                                              "cuPointerGetAttributes"));
  if (capable == 0 || base == 0) return std::optional<IpcDescriptor>();
  std::optional<HandleCache::Entry> entry = HandleCache::Instance().Find(buffer_id);
  if (!entry) {
    entry = HandleCache::Entry{base, size, {}};
    if (!CudaStatus(cudaIpcGetMemHandle(&entry->handle, internal::PointerFromAddress(base)),
                    "cudaIpcGetMemHandle")
             .ok()) {
      return std::optional<IpcDescriptor>();
    }
    HandleCache::Instance().Add(buffer_id, *entry);
  }
  IpcDescriptor descriptor;
  descriptor.has_handle = true;
  std::memcpy(descriptor.handle.data(), &entry->handle, sizeof entry->handle);
  descriptor.offset = static_cast<int64_t>(pointer - entry->base);
  descriptor.allocation_size = static_cast<int64_t>(entry->size);
  return std::optional<IpcDescriptor>(descriptor);
}

Result<IpcDescriptor> StageForExport(const Tensor& tensor, int ordinal,
                                     std::vector<std::shared_ptr<void>>& pins, ExportOrdering ordering) {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<DeviceAllocation> staging,
                        DevicePool::Staging().Acquire(ordinal, tensor.nbytes()));
  // The copy runs on the legacy stream: unless the writers are known to be
  // ordered before it, they are waited for.
  if (ordering == ExportOrdering::kSynchronised) TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
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

// Says once per process why a tensor was staged that might have gone by
// reference.
void WarnOnce(std::once_flag& flag, const std::string& text) {
  std::call_once(flag, [&] { std::fprintf(stderr, "tesscpp: %s\n", text.c_str()); });
}

// The descriptor of memory legacy IPC cannot name: its VMM allocations when
// the peer maps them, else nullopt (staged).
Result<std::optional<IpcDescriptor>> DescribeUnnamed(const Tensor& tensor, int ordinal, VmmPeer vmm_peer) {
  static std::once_flag peer_cannot, allocation_cannot;
  // A borrowed input returned as an output is the peer's: only it may hand it out.
  if (internal::PeerRanges::Contains(tensor.data()) || vmm_peer == VmmPeer::kNotYetKnown) {
    return std::optional<IpcDescriptor>();
  }
  if (vmm_peer == VmmPeer::kCannot) {
    WarnOnce(
        peer_cannot,
        "a CUDA tensor in memory that legacy IPC cannot name (VMM such as PyTorch's expandable segments, a "
        "stream-ordered pool, managed memory) is copied into a staging buffer for cuda_ipc; VMM memory goes "
        "by reference only between tesscpp ends that share a network namespace "
        "(docs/gpu-transport-protocol.md 13)");
    return std::optional<IpcDescriptor>();
  }
  std::string why_not;
  TESS_ASSIGN_OR_RETURN(std::optional<IpcDescriptor> described,
                        internal::DescribeVmm(tensor.data(), tensor.nbytes(), ordinal, &why_not));
  if (!described) {
    WarnOnce(allocation_cannot, "a CUDA tensor is copied into a staging buffer for cuda_ipc: " + why_not);
  }
  return described;
}

}  // namespace

Result<IpcDescriptor> ExportIpc(const Tensor& tensor, std::vector<std::shared_ptr<void>>& pins,
                                ExportOrdering ordering, VmmPeer vmm_peer) {
  TESS_ASSIGN_OR_RETURN(int ordinal, internal::TensorOrdinal(tensor));
  TESS_ASSIGN_OR_RETURN(std::string uuid, DeviceUuid(ordinal));
  if (tensor.nbytes() == 0) {
    IpcDescriptor empty;
    empty.device_uuid = std::move(uuid);
    return empty;
  }
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  TESS_ASSIGN_OR_RETURN(std::optional<IpcDescriptor> direct, DescribeAllocation(tensor.data()));
  std::atomic<uint64_t>* counted = &internal::TransportCountersOf().legacy_exports;
  if (!direct) {
    TESS_ASSIGN_OR_RETURN(direct, DescribeUnnamed(tensor, ordinal, vmm_peer));
    counted = &internal::TransportCountersOf().vmm_exports;
  }
  IpcDescriptor descriptor;
  if (direct) {
    descriptor = *std::move(direct);
    pins.push_back(tensor.buffer().owner());
  } else {
    TESS_ASSIGN_OR_RETURN(descriptor, StageForExport(tensor, ordinal, pins, ordering));
    counted = &internal::TransportCountersOf().staged_exports;
  }
  ++*counted;
  descriptor.device_uuid = std::move(uuid);
  // Every write to the exported bytes must be finished before the peer reads
  // (or, with kLegacyStream, before the event the peer waits for).
  if (ordering == ExportOrdering::kSynchronised) TESS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return descriptor;
}

namespace {

// This process's interprocess event of each device, created on first use and
// recorded again for every message. Leaked: peers may still hold its handle at exit.
class OwnEvents {
 public:
  static OwnEvents& Instance() {
    static auto* events = new OwnEvents();
    return *events;
  }

  Result<cudaIpcEventHandle_t> Record(int ordinal) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = events_.find(ordinal);
    if (it == events_.end()) {
      TESS_ASSIGN_OR_RETURN(internal::CudaEvent event, internal::CreateEvent(cudaEventInterprocess));
      cudaIpcEventHandle_t handle;
      TESS_CUDA_RETURN_IF_ERROR(cudaIpcGetEventHandle(&handle, event.get()));
      it = events_.emplace(ordinal, Exported{std::move(event), handle}).first;
    }
    TESS_CUDA_RETURN_IF_ERROR(cudaEventRecord(it->second.event.get(), cudaStreamLegacy));
    return it->second.handle;
  }

 private:
  struct Exported {
    internal::CudaEvent event;
    cudaIpcEventHandle_t handle;
  };
  std::mutex mutex_;
  std::map<int, Exported> events_;
};

RecentCache<internal::CudaEvent>& PeerEvents() {
  static auto* events = new RecentCache<internal::CudaEvent>(64);  // leaked: as Mappings()
  return *events;
}

}  // namespace

Result<IpcEvent> RecordIpcEvent(int ordinal) {
  IpcEvent recorded;
  TESS_ASSIGN_OR_RETURN(recorded.device_uuid, DeviceUuid(ordinal));
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  TESS_ASSIGN_OR_RETURN(cudaIpcEventHandle_t handle, OwnEvents::Instance().Record(ordinal));
  static_assert(sizeof handle == IpcDescriptor::kHandleSize);
  std::memcpy(recorded.handle.data(), &handle, sizeof handle);
  return recorded;
}

Status WaitIpcEvent(const IpcEvent& event, IpcEventWait how) {
  TESS_ASSIGN_OR_RETURN(int ordinal, OrdinalOfUuid(event.device_uuid));
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
  cudaIpcEventHandle_t handle;
  std::memcpy(&handle, event.handle.data(), sizeof handle);
  TESS_ASSIGN_OR_RETURN(
      std::shared_ptr<internal::CudaEvent> opened,
      PeerEvents().Get(HandleKey(ordinal, handle), [&]() -> Result<std::shared_ptr<internal::CudaEvent>> {
        cudaEvent_t peer = nullptr;
        TESS_CUDA_RETURN_IF_ERROR(cudaIpcOpenEventHandle(&peer, handle));
        return std::make_shared<internal::CudaEvent>(peer);
      }));
  if (how == IpcEventWait::kOnHost)
    return CudaStatus(cudaEventSynchronize(opened->get()), "cudaEventSynchronize");
  return CudaStatus(cudaStreamWaitEvent(cudaStreamLegacy, opened->get(), 0), "cudaStreamWaitEvent");
}

namespace {

// The exported bytes of a `nbytes` array, mapped into this process (mapping
// null for an empty array, which carries no handle).
struct MappedBytes {
  int ordinal = 0;
  std::shared_ptr<void> mapping;
  uint8_t* data = nullptr;
};

Result<MappedBytes> MapExported(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape) {
  MappedBytes mapped;
  TESS_ASSIGN_OR_RETURN(mapped.ordinal, OrdinalOfUuid(descriptor.device_uuid));
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  if ((!descriptor.has_handle && !descriptor.is_vmm()) || nbytes == 0) {
    if (nbytes != 0) {
      return Status::InvalidArgument("cuda_ipc descriptor has no handle, but the array of shape ",
                                     shape.ToString(), " and dtype ", DtypeName(dtype), " is not empty");
    }
    return mapped;
  }
  if (descriptor.offset < 0 || descriptor.allocation_size < 0 ||
      descriptor.offset > descriptor.allocation_size - nbytes) {
    return Status::InvalidArgument("the cuda_ipc descriptor names bytes [", descriptor.offset, ", ",
                                   descriptor.offset, " + ", nbytes, ") of an allocation of ",
                                   descriptor.allocation_size, " bytes");
  }
  if (descriptor.is_vmm()) {
    TESS_ASSIGN_OR_RETURN(internal::VmmBytes bytes, internal::MapVmm(descriptor, mapped.ordinal));
    mapped.mapping = std::move(bytes.mapping);
    mapped.data = bytes.data;
    return mapped;
  }
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(mapped.ordinal));
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, descriptor.handle.data(), sizeof handle);
  TESS_ASSIGN_OR_RETURN(
      std::shared_ptr<IpcMapping> opened, Mappings().Get(HandleKey(mapped.ordinal, handle), [&] {
        return IpcMapping::Open(mapped.ordinal, handle, static_cast<size_t>(descriptor.allocation_size));
      }));
  mapped.data = opened->base() + descriptor.offset;
  mapped.mapping = std::move(opened);
  return mapped;
}

}  // namespace

Result<Tensor> ImportIpc(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape) {
  TESS_ASSIGN_OR_RETURN(MappedBytes mapped, MapExported(descriptor, dtype, shape));
  TESS_ASSIGN_OR_RETURN(Tensor tensor,
                        internal::TensorInPool(DevicePool::Imports(), dtype, shape, mapped.ordinal));
  if (mapped.mapping == nullptr) return tensor;
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(mapped.ordinal));
  TESS_ASSIGN_OR_RETURN(cudaStream_t stream, ImportStream(mapped.ordinal));
  TESS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(tensor.data(), mapped.data, static_cast<size_t>(tensor.nbytes()),
                                            cudaMemcpyDeviceToDevice, stream));
  TESS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return tensor;
}

Result<Tensor> BorrowIpc(const IpcDescriptor& descriptor, Dtype dtype, const Shape& shape,
                         std::shared_ptr<void> lease) {
  TESS_ASSIGN_OR_RETURN(MappedBytes mapped, MapExported(descriptor, dtype, shape));
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  // What the borrowed bytes depend on: the mapping, and whatever the borrower
  // ties to the tensor's lifetime (a client's acknowledgement).
  struct Borrowed {
    std::shared_ptr<void> mapping;
    std::shared_ptr<void> lease;
  };
  auto owner = std::make_shared<Borrowed>(Borrowed{std::move(mapped.mapping), std::move(lease)});
  Buffer buffer = nbytes == 0 ? Buffer() : Buffer::Wrap(mapped.data, nbytes, std::move(owner));
  return Tensor::Make(dtype, shape, std::move(buffer), Device::CUDA(mapped.ordinal));
}

}  // namespace tesscpp::cuda
