// The server's side of cuda_ipc (server_transport.h): tesseract-core 1.15's
// export registry and transport check, and tesscpp's extensions a client
// offers in headers — leases for borrowed outputs, IPC events instead of
// device synchronisations, VMM memory by reference.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_transport/cuda_ipc_buffer.h"
#include "gpu_transport/cuda_ipc_transport.h"
#include "gpu_transport/export_registry.h"
#include "gpu_transport/headers.h"
#include "gpu_transport/ipc_arrays.h"
#include "gpu_transport/ipc_events.h"
#include "gpu_transport/server_transport.h"
#include "gpu_transport/transport_check.h"
#include "platform/process_identity.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/device_values.h"

namespace tesscpp::gpu_transport {
namespace {

using platform::FindHeader;

class CudaIpcServer;

class CudaIpcCall final : public ServerCall {
 public:
  CudaIpcCall(ExportRegistry& exports, const Headers& request_headers);
  DeviceArrayWriter* outputs() override { return &outputs_; }
  Result<Headers> Finish(const Value& request_body, const Value* written) override;
  bool acknowledged() const { return acknowledged_; }

 private:
  ExportRegistry* exports_;
  bool acknowledged_ = false;
  bool ipc_events_ = false;
  bool vmm_ = false;  // the client offered cuda_vmm and this server can reach it
  std::optional<std::string> borrower_;
  IpcArrays outputs_ = IpcArrays::Exporting();
};

class CudaIpcServer final : public ServerTransport {
 public:
  void OnRequest(const Headers& request_headers) override;
  std::unique_ptr<DeviceArrayReader> RequestArrays() override {
    return std::make_unique<IpcArrays>(IpcArrays::Borrowing());
  }
  Result<std::unique_ptr<ServerCall>> Begin(const Headers& request_headers) override;
  Status Settle(const Value& value) const override;
  std::pair<Buffer, Headers> AnswerCheck(const Value& request) override;

 private:
  ExportRegistry exports_;
};

void CudaIpcServer::OnRequest(const Headers& request_headers) {
  const std::optional<std::string_view> done = FindHeader(request_headers, kExportsDoneHeader);
  exports_.OnRequest(done ? std::optional<std::string>(*done) : std::nullopt);
}

CudaIpcCall::CudaIpcCall(ExportRegistry& exports, const Headers& request_headers)
    : exports_(&exports),
      // A client that sends Tesseract-Exports-Done (even empty) acknowledges
      // exports; others get theirs released at their next call.
      acknowledged_(FindHeader(request_headers, kExportsDoneHeader).has_value()),
      // The IPC-event extension (docs/gpu-transport-protocol.md 12): the client waits
      // for our event instead of this server synchronising its devices.
      ipc_events_(FindHeader(request_headers, kIpcEventsHeader) == "1") {
  if (auto borrower = FindHeader(request_headers, kBorrowerHeader)) borrower_ = std::string(*borrower);
  // The cuda_vmm extension (docs/gpu-transport-protocol.md 13): VMM outputs go by
  // reference to a client that offered it and whose socket this server
  // reaches (the same network namespace), so that it can ask for them.
  if (auto offer = FindHeader(request_headers, kCudaVmmHeader)) {
    vmm_ = cuda::VmmEndpoint().has_value() && cuda::VmmPeerReachable(*offer);
  }
  outputs_ = IpcArrays::Exporting(
      ipc_events_ ? cuda::ExportOrdering::kLegacyStream : cuda::ExportOrdering::kSynchronised,
      vmm_ ? cuda::VmmPeer::kCan : cuda::VmmPeer::kCannot);
}

Result<std::unique_ptr<ServerCall>> CudaIpcServer::Begin(const Headers& request_headers) {
  auto call = std::make_unique<CudaIpcCall>(exports_, request_headers);
  // Releases what a client that does not acknowledge left.
  exports_.BeforeEndpoint(call->acknowledged());
  if (auto inputs_event = FindHeader(request_headers, kInputsEventHeader)) {
    // The component's work waits on the GPU for the client's inputs.
    const Status waiting = WaitForIpcEvents(*inputs_event, cuda::IpcEventWait::kOnLegacyStream);
    if (!waiting.ok()) return Status::InvalidArgument(kInputsEventHeader, ": ", waiting.message());
  }
  return std::unique_ptr<ServerCall>(std::move(call));
}

Result<Headers> CudaIpcCall::Finish(const Value& request_body, const Value* written) {
  // cuda_ipc inputs are borrowed client memory and exported outputs are read
  // by the client: the work queued on both must be over when it gets the answer.
  std::vector<int> devices = core::DevicesOf(request_body);
  const std::vector<int> output_devices = written != nullptr ? core::DevicesOf(*written) : std::vector<int>();
  auto holds = [](const std::vector<int>& list, int device) {
    return std::find(list.begin(), list.end(), device) != list.end();
  };
  // With the event the client waits on the GPU; without it (or when no
  // event can be recorded, or the call failed) the devices are synchronised.
  std::string exports_event;
  bool by_event = ipc_events_ && written != nullptr;
  if (by_event) {
    for (int device : output_devices) {
      if (!holds(devices, device)) devices.push_back(device);
    }
    auto recorded = RecordIpcEvents(devices);
    by_event = recorded.ok();
    if (recorded.ok()) exports_event = *std::move(recorded);
  }
  for (int device : by_event ? std::vector<int>() : devices) {
    // Writing an output without the event (an export, or a host copy)
    // synchronised its device already.
    if (!ipc_events_ && holds(output_devices, device)) continue;
    TESS_RETURN_IF_ERROR(cuda::SynchronizeDevice(device));
  }
  Headers headers;
  if (written == nullptr) return headers;
  // A borrower the server can see gets its exports kept while it lives, and
  // is told so (it copies them out otherwise, as any 1.15 client). /proc is
  // read only when there is something to keep.
  std::optional<platform::ProcessIdentity> borrower;
  if (acknowledged_ && borrower_ && !outputs_.pins().empty()) {
    borrower = platform::ProcessIdentity::Parse(*borrower_);
  }
  if (borrower && !borrower->Alive()) borrower.reset();
  if (auto id = exports_->Keep(std::move(outputs_.pins()), acknowledged_, borrower)) {
    headers.emplace_back(kExportsHeader, *id);
    if (borrower) headers.emplace_back(kExportsLeaseHeader, "borrower");
  }
  if (ipc_events_) headers.emplace_back(kIpcEventsHeader, "1");
  if (vmm_) headers.emplace_back(kCudaVmmHeader, "1");
  if (!exports_event.empty()) headers.emplace_back(kExportsEventHeader, std::move(exports_event));
  return headers;
}

Status CudaIpcServer::Settle(const Value& value) const {
  for (int device : core::DevicesOf(value)) TESS_RETURN_IF_ERROR(cuda::SynchronizeDevice(device));
  return Status::OK();
}

std::pair<Buffer, Headers> CudaIpcServer::AnswerCheck(const Value& request) {
  exports_.BeforeEndpoint(/*acknowledged=*/true);
  const Value reply = AnswerTransportCheck(request, std::string(kCudaIpcName));
  IpcArrays arrays = IpcArrays::Exporting();
  JsonWriteOptions write;
  write.arrays.device_arrays = &arrays;
  auto written = WriteJson(reply, write);
  if (!written.ok()) {
    return {*WriteJson(Value::Dict{{"ok", false},
                                   {"reason",
                                    "the Tesseract could not exchange GPU memory with the client: "
                                    "RuntimeError: " +
                                        written.status().message()}}),
            {}};
  }
  Headers headers;
  // The check's exports are kept as an acknowledging client's, whatever it sent.
  if (auto id = exports_.Keep(std::move(arrays.pins()), true)) headers.emplace_back(kExportsHeader, *id);
  return {*std::move(written), std::move(headers)};
}

}  // namespace

std::unique_ptr<ServerTransport> MakeCudaIpcServer(const ServerTransportOptions& options) {
  cuda::SetPoolFraction(options.pool_fraction);
  return std::make_unique<CudaIpcServer>();
}

}  // namespace tesscpp::gpu_transport
