// cuda_api.cc: errors, driver entry points, device selection and identity.
#include "cuda/cuda_api.h"

#include <array>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "tesscpp/cuda.h"

namespace tesscpp::cuda {
namespace internal {

Status CudaStatus(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return Status::OK();
  (void)cudaGetLastError();
  // The macro passes the whole call expression; the name is what precedes "(".
  return Status::Unavailable(call.substr(0, call.find('(')), " failed: ", cudaGetErrorString(error));
}

Status DriverStatus(CUresult result, std::string_view call) {
  if (result == CUDA_SUCCESS) return Status::OK();
  return Status::Unavailable(call, " failed with error code ", static_cast<int>(result));
}

void LogIfFailed(const Status& status) {
  if (!status.ok()) std::fprintf(stderr, "tesscpp: %s\n", status.message().c_str());
}

void LogReleaseFailure(CUresult result, std::string_view call) {
  if (result != CUDA_ERROR_DEINITIALIZED) LogIfFailed(DriverStatus(result, call));
}

void LogReleaseFailure(cudaError_t error, std::string_view call) {
  if (error == cudaErrorCudartUnloading) {
    (void)cudaGetLastError();
    return;
  }
  LogIfFailed(CudaStatus(error, call));
}

Result<CudaStream> CreateStream() {
  cudaStream_t stream = nullptr;
  TESS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return CudaStream(stream);
}

Result<CudaEvent> CreateEvent(unsigned int extra_flags) {
  cudaEvent_t event = nullptr;
  TESS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | extra_flags));
  return CudaEvent(event);
}

Result<PinnedBuffer> AllocatePinned(int64_t size) {
  void* data = nullptr;
  TESS_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&data, static_cast<size_t>(size), cudaHostAllocDefault));
  return PinnedBuffer(data);
}

std::string FormatUuid(const CUuuid& uuid) {
  // str(uuid.UUID(bytes=raw)): 8-4-4-4-12 lowercase hex.
  std::string text;
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

Status GpuOutOfReach(std::string_view uuid, std::string_view why) {
  return Status::Unavailable(
      "The array lives on the GPU with UUID ", uuid, ", ", why,
      ". Give both processes access to that GPU (e.g. via --gpus or CUDA_VISIBLE_DEVICES).");
}

Result<int> FindOrdinal(const std::vector<std::string>& uuids, std::string_view uuid) {
  for (size_t i = 0; i < uuids.size(); ++i) {
    if (uuids[i] == uuid) return static_cast<int>(i);
  }
  return GpuOutOfReach(uuid, "which this process cannot see");
}

namespace {

// What the process learns about CUDA once: whether it is usable, the driver
// entry points, and each visible device's UUID.
struct CudaState {
  Status available;
  DriverApi driver;
  std::vector<std::string> uuids;  // by ordinal
};

template <typename Fn>
Status Resolve(const char* symbol, Fn& fn) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found{};
  // 12000: the newest ABI of each symbol as of CUDA 12 (cuMemGetAddressRange_v2,
  // cuDeviceGetUuid_v2), which CUDA 13 drivers all have.
  TESS_RETURN_IF_ERROR(
      CudaStatus(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found),
                 "cudaGetDriverEntryPointByVersion"));
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    return Status::Unavailable("the CUDA driver has no ", symbol);
  }
  fn = reinterpret_cast<Fn>(address);
  return Status::OK();
}

Status ResolveAll() { return Status::OK(); }

template <typename Fn, typename... Rest>
Status ResolveAll(const char* symbol, Fn& fn, Rest&... rest) {
  TESS_RETURN_IF_ERROR(Resolve(symbol, fn));
  return ResolveAll(rest...);
}

CudaState Probe() {
  CudaState state;
  int count = 0;
  state.available = CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (state.available.ok() && count == 0) state.available = Status::Unavailable("no CUDA device is visible");
  if (!state.available.ok()) return state;
  DriverApi& d = state.driver;
  state.available = ResolveAll(
      "cuDeviceGet", d.device_get, "cuDeviceGetUuid", d.device_get_uuid, "cuPointerGetAttribute",
      d.pointer_get_attribute, "cuPointerGetAttributes", d.pointer_get_attributes,
      "cuMemRetainAllocationHandle", d.mem_retain_allocation_handle, "cuMemExportToShareableHandle",
      d.mem_export_to_shareable_handle, "cuMemImportFromShareableHandle", d.mem_import_from_shareable_handle,
      "cuMemRelease", d.mem_release, "cuMemAddressReserve", d.mem_address_reserve, "cuMemAddressFree",
      d.mem_address_free, "cuMemMap", d.mem_map, "cuMemUnmap", d.mem_unmap, "cuMemSetAccess",
      d.mem_set_access);
  for (int i = 0; state.available.ok() && i < count; ++i) {
    CUdevice device = 0;
    CUuuid uuid{};
    state.available = DriverStatus(d.device_get(&device, i), "cuDeviceGet");
    if (state.available.ok())
      state.available = DriverStatus(d.device_get_uuid(&uuid, device), "cuDeviceGetUuid");
    state.uuids.push_back(FormatUuid(uuid));
  }
  return state;
}

const CudaState& State() {
  static const CudaState* state = new CudaState(Probe());  // leaked: used until exit
  return *state;
}

}  // namespace

Result<const DriverApi*> Driver() {
  TESS_RETURN_IF_ERROR(State().available);
  return &State().driver;
}

Result<DeviceGuard> DeviceGuard::Enter(int ordinal) {
  int previous = 0;
  TESS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  // Always set, even when equal: it binds the primary context on a fresh thread.
  TESS_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  return DeviceGuard(previous);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)CudaStatus(cudaSetDevice(previous_), "cudaSetDevice");
}

Result<int> TensorOrdinal(const Tensor& tensor) { return DeviceOrdinal(tensor.device()); }

Result<int> DeviceOrdinal(Device device) {
  if (device.type != DeviceType::kCUDA) {
    return Status::InvalidArgument("expected a CUDA tensor, got one on ", device.ToString());
  }
  TESS_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (device.id < 0 || device.id >= count) {
    return Status::InvalidArgument("the tensor is on ", device.ToString(), ", but this process sees ", count,
                                   " CUDA device(s)");
  }
  return device.id;
}

}  // namespace internal

bool BuiltWithCuda() { return true; }

Status CheckAvailable() { return internal::State().available; }

Result<int> DeviceCount() {
  TESS_RETURN_IF_ERROR(CheckAvailable());
  return static_cast<int>(internal::State().uuids.size());
}

Result<int> CurrentDevice() {
  TESS_RETURN_IF_ERROR(CheckAvailable());
  int ordinal = 0;
  TESS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&ordinal));
  return ordinal;
}

Result<int> DeviceOfPointer(const void* data) {
  TESS_ASSIGN_OR_RETURN(const internal::DriverApi* driver, internal::Driver());
  int ordinal = -1;
  TESS_RETURN_IF_ERROR(
      internal::DriverStatus(driver->pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                           reinterpret_cast<CUdeviceptr>(data)),
                             "cuPointerGetAttribute"));
  return ordinal;
}

namespace {

// Makes `waiter` wait on the GPU for the work queued so far on `producer`.
Status OrderStreams(cudaStream_t producer, cudaStream_t waiter, int ordinal) {
  TESS_RETURN_IF_ERROR(CheckAvailable());
  TESS_ASSIGN_OR_RETURN(internal::DeviceGuard guard, internal::DeviceGuard::Enter(ordinal));
  TESS_ASSIGN_OR_RETURN(internal::CudaEvent event, internal::CreateEvent());
  TESS_CUDA_RETURN_IF_ERROR(cudaEventRecord(event.get(), producer));
  // Destroying the event right after is allowed: the wait keeps what it needs.
  return internal::CudaStatus(cudaStreamWaitEvent(waiter, event.get(), 0), "cudaStreamWaitEvent");
}

}  // namespace

Status OrderAfterStream(uintptr_t stream, int ordinal) {
  // 1 is the CUDA array interface's name of the legacy default stream, which
  // is ordered after itself.
  if (stream == 1) return CheckAvailable();
  return OrderStreams(internal::StreamFromInteger(stream), cudaStreamLegacy, ordinal);
}

Status OrderStreamAfterLegacy(uintptr_t stream, int ordinal) {
  if (stream == 1) return CheckAvailable();
  return OrderStreams(cudaStreamLegacy, internal::StreamFromInteger(stream), ordinal);
}

Status SynchronizeDevice(int ordinal) {
  TESS_ASSIGN_OR_RETURN(internal::DeviceGuard guard, internal::DeviceGuard::Enter(ordinal));
  return internal::CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

Result<std::string> DeviceUuid(int ordinal) {
  TESS_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return Status::InvalidArgument("CUDA device ", ordinal, " does not exist (", count, " visible)");
  }
  return internal::State().uuids[static_cast<size_t>(ordinal)];
}

Result<int> OrdinalOfUuid(std::string_view uuid) {
  if (Status available = CheckAvailable(); !available.ok()) {
    // The caller needs the GPU named, not only that this process has none.
    return internal::GpuOutOfReach(uuid, "but this process can use no GPU (" + available.message() + ")");
  }
  return internal::FindOrdinal(internal::State().uuids, uuid);
}

}  // namespace tesscpp::cuda
