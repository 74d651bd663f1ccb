// cuda_disabled.cc: the cuda module's API in a build without CUDA. Every entry
// point says so; nothing pretends to work.
#include "tesscpp/cuda.h"

#include "core/memory_manager.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"
#include "tesscpp/internal/cuda/cuda_transfer.h"

namespace tesscpp::cuda {
namespace {

Status NotBuilt() {
  return Status::Unimplemented(
      "tesscpp was built without CUDA (configure with a CUDA toolkit and TESSCPP_CUDA=ON)");
}

// Device memory can still arrive here (a CUDA array from Python): copying it
// says why not.
class NoCudaMemory final : public core::MemoryManager {
 public:
  NoCudaMemory() { core::SetMemoryManager(DeviceType::kCUDA, this); }
  ~NoCudaMemory() override { core::SetMemoryManager(DeviceType::kCUDA, nullptr); }
  Result<Buffer> CopyToHost(const Buffer& /*bytes*/, Device /*device*/) const override { return NotBuilt(); }
};

const NoCudaMemory kNoCudaMemory;

}  // namespace

bool BuiltWithCuda() { return false; }
Status CheckAvailable() { return NotBuilt(); }
Result<int> DeviceCount() { return NotBuilt(); }
Result<int> CurrentDevice() { return NotBuilt(); }
Result<std::string> DeviceUuid(int /*ordinal*/) { return NotBuilt(); }
Result<int> OrdinalOfUuid(std::string_view /*uuid*/) { return NotBuilt(); }
Result<int> DeviceOfPointer(const void* /*data*/) { return NotBuilt(); }
Status OrderAfterStream(uintptr_t /*stream*/, int /*ordinal*/) { return NotBuilt(); }
Status OrderStreamAfterLegacy(uintptr_t /*stream*/, int /*ordinal*/) { return NotBuilt(); }
Status SynchronizeDevice(int /*ordinal*/) { return NotBuilt(); }
Result<StreamMark> StreamMark::OnLegacyStream(int /*ordinal*/) { return NotBuilt(); }
Result<bool> StreamMark::Reached() const { return NotBuilt(); }
Status StreamMark::Wait() const { return NotBuilt(); }
Result<Tensor> AllocateDevice(Dtype /*dtype*/, Shape /*shape*/, int /*ordinal*/) { return NotBuilt(); }
Result<Tensor> CopyToDevice(const Tensor& /*tensor*/, int /*ordinal*/) { return NotBuilt(); }
Status CopyOnDeviceAsync(void* /*destination*/, const void* /*source*/, int64_t /*nbytes*/, int /*ordinal*/,
                         uintptr_t /*stream*/) {
  return NotBuilt();
}
Status CopyToHostAfterStream(void* /*destination*/, const void* /*source*/, int64_t /*nbytes*/,
                             int /*ordinal*/, uintptr_t /*stream*/) {
  return NotBuilt();
}
Status CopyToDeviceOnStream(void* /*destination*/, const void* /*source*/, int64_t /*nbytes*/,
                            int /*ordinal*/, uintptr_t /*stream*/) {
  return NotBuilt();
}
void SetPoolFraction(double /*fraction*/) {}
Result<IpcDescriptor> ExportIpc(const Tensor& /*tensor*/, std::vector<std::shared_ptr<void>>& /*pins*/,
                                ExportOrdering /*ordering*/, VmmPeer /*vmm_peer*/) {
  return NotBuilt();
}
std::optional<std::string> VmmEndpoint() { return std::nullopt; }
bool VmmPeerReachable(std::string_view /*endpoint*/) { return false; }
TransportCounters GetTransportCounters() { return {}; }
Result<IpcEvent> RecordIpcEvent(int /*ordinal*/) { return NotBuilt(); }
Status WaitIpcEvent(const IpcEvent& /*event*/, IpcEventWait /*how*/) { return NotBuilt(); }
Result<std::unique_ptr<TransferDone>> CopyHostToDevice(std::span<const HostToDeviceCopy> /*copies*/,
                                                       int /*device*/, uintptr_t /*consumer_stream*/) {
  return NotBuilt();
}
Result<uintptr_t> TransferStream(int /*device*/) { return NotBuilt(); }
Result<Tensor> ImportIpc(const IpcDescriptor& /*descriptor*/, Dtype /*dtype*/, const Shape& /*shape*/) {
  return NotBuilt();
}
Result<Tensor> BorrowIpc(const IpcDescriptor& /*descriptor*/, Dtype /*dtype*/, const Shape& /*shape*/,
                         std::shared_ptr<void> /*lease*/) {
  return NotBuilt();
}

}  // namespace tesscpp::cuda
