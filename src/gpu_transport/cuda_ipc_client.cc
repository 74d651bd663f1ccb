// The client's side of cuda_ipc (client_transport.h): tesseract-core 1.15's
// export acknowledgements, and tesscpp's extensions, each offered in headers
// that a 1.15 server ignores — leases on borrowed outputs, IPC events that
// order the GPU work of both ends, and VMM memory by reference.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_transport/client_exports.h"
#include "gpu_transport/client_transport.h"
#include "gpu_transport/cuda_ipc_transport.h"
#include "gpu_transport/headers.h"
#include "gpu_transport/ipc_arrays.h"
#include "gpu_transport/ipc_events.h"
#include "gpu_transport/transport_check.h"
#include "platform/phase_trace.h"
#include "platform/process_identity.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/device_values.h"

namespace tesscpp::gpu_transport {
namespace {

// Started on the first cuda_ipc request only: a CPU-only client never
// initialises CUDA for it.
const std::optional<std::string>& ThisVmmEndpoint() {
  static const std::optional<std::string> kEndpoint = cuda::VmmEndpoint();
  return kEndpoint;
}

bool Succeeded(int status) { return status >= 200 && status < 300; }

// What the session has learnt of its server and must tell it, shared by its calls.
struct SessionState {
  ClientTransportOptions options;
  std::shared_ptr<ExportAcks> acks = std::make_shared<ExportAcks>();
  std::atomic<bool> server_waits_for_events{false};  // it answered Tesscpp-Ipc-Events: 1
  std::atomic<cuda::VmmPeer> server_maps_vmm{cuda::VmmPeer::kNotYetKnown};  // Tesscpp-Cuda-Vmm: 1 or not

  void Acknowledge(const HeaderLookup& header) {
    if (auto id = header(kExportsHeader)) acks->Add(*std::move(id));
  }
};

class CudaIpcCall final : public ClientCall {
 public:
  CudaIpcCall(std::shared_ptr<SessionState> state, bool cuda_ipc)
      : state_(std::move(state)),
        cuda_ipc_(cuda_ipc),
        // IPC events are offered on every cuda_ipc request, and our inputs go
        // without a device synchronisation once the server has said that it
        // waits for their event.
        offer_events_(cuda_ipc && state_->options.ipc_events),
        inputs_by_event_(offer_events_ && state_->server_waits_for_events.load()),
        // VMM inputs go by reference once the server has said that it maps
        // them; the offer names where it asks for them.
        offer_vmm_(cuda_ipc && ThisVmmEndpoint().has_value()),
        input_exports_(IpcArrays::Exporting(
            inputs_by_event_ ? cuda::ExportOrdering::kLegacyStream : cuda::ExportOrdering::kSynchronised,
            offer_vmm_ ? state_->server_maps_vmm.load() : cuda::VmmPeer::kCannot)) {}

  DeviceArrayWriter* inputs() override { return cuda_ipc_ ? &input_exports_ : nullptr; }

  Result<std::vector<std::string>> Headers(const Value* payload) override {
    std::vector<std::string> headers;
    if (inputs_by_event_ && payload != nullptr && !input_exports_.pins().empty()) {
      TESS_ASSIGN_OR_RETURN(std::string event, RecordIpcEvents(core::DevicesOf(*payload)));
      if (!event.empty()) headers.push_back(std::string(kInputsEventHeader) + ": " + event);
    }
    ExportAcks::Taken taken = state_->acks->Take(/*always=*/cuda_ipc_, /*wait=*/false);
    if (!taken.unproven.ok()) {
      // Nothing is acknowledged with a call that cannot be made.
      if (taken.ids) state_->acks->Requeue(*taken.ids);
      return taken.unproven;
    }
    exports_done_ = std::move(taken.ids);
    if (exports_done_) headers.push_back(ExportsDoneHeader(*exports_done_));
    // Offer to borrow the outputs (only a client that acknowledges may be
    // left holding an export id).
    static const std::optional<platform::ProcessIdentity> kThisProcess = platform::ProcessIdentity::Self();
    if (cuda_ipc_ && exports_done_ && kThisProcess) {
      headers.push_back(std::string(kBorrowerHeader) + ": " + kThisProcess->ToString());
    }
    if (offer_events_) headers.push_back(std::string(kIpcEventsHeader) + ": 1");
    if (offer_vmm_) headers.push_back(std::string(kCudaVmmHeader) + ": " + *ThisVmmEndpoint());
    return headers;
  }

  void Unanswered() override {
    if (exports_done_) state_->acks->Requeue(*exports_done_);
  }

  Result<DeviceArrayReader*> Answered(int status, const HeaderLookup& header) override {
    // One the server keeps while we live is acknowledged when its borrowed outputs go.
    if (exports_done_) {
      std::optional<std::string> id = header(kExportsHeader);
      if (id && cuda_ipc_ && header(kExportsLeaseHeader) == "borrower") {
        borrowed_ =
            std::make_shared<BorrowedOutputs>(*std::move(id), state_->acks, state_->options.server.lock());
      } else {
        state_->Acknowledge(header);
      }
    }
    // The server's work on our inputs and its outputs is done once its event
    // is: waited for before anything is read or handed back to the caller. (If
    // that fails, the exports above are acknowledged unread.)
    if (auto event = header(kExportsEventHeader)) {
      TESS_RETURN_IF_ERROR(WaitForIpcEvents(*event, cuda::IpcEventWait::kOnHost));
      platform::PhaseTrace::Mark("event_wait");
    }
    if (offer_events_ && Succeeded(status)) state_->server_waits_for_events = header(kIpcEventsHeader) == "1";
    if (offer_vmm_) {
      const bool accepted = header(kCudaVmmHeader) == "1";
      if (Succeeded(status)) {
        state_->server_maps_vmm = accepted ? cuda::VmmPeer::kCan : cuda::VmmPeer::kCannot;
      } else if (!accepted) {
        // A failure from a server that no longer says it maps VMM memory (one
        // swapped in behind the URL): the next request stages and asks again.
        state_->server_maps_vmm = cuda::VmmPeer::kNotYetKnown;
      }
    }
    if (!cuda_ipc_) return nullptr;
    output_imports_.emplace(borrowed_ != nullptr ? IpcArrays::Borrowing(borrowed_) : IpcArrays::Copying());
    return &*output_imports_;
  }

  void Decoded(const Value& outputs) override {
    if (borrowed_ != nullptr) borrowed_->set_devices(core::DevicesOf(outputs));
  }

 private:
  std::shared_ptr<SessionState> state_;
  const bool cuda_ipc_;
  const bool offer_events_;
  const bool inputs_by_event_;
  const bool offer_vmm_;
  // What the server may read of our GPU inputs; kept until its answer is here.
  IpcArrays input_exports_;
  std::optional<std::vector<std::string>> exports_done_;
  std::shared_ptr<BorrowedOutputs> borrowed_;
  std::optional<IpcArrays> output_imports_;
};

class CudaIpcClient final : public ClientTransport {
 public:
  explicit CudaIpcClient(ClientTransportOptions options) : state_(std::make_shared<SessionState>()) {
    state_->options = std::move(options);
  }

  std::unique_ptr<ClientCall> Begin(bool requested) override {
    return std::make_unique<CudaIpcCall>(state_, requested);
  }
  Result<CheckOutcome> Check(std::string_view peer, const CheckPost& post) override {
    return CheckFromClient(peer, post, [&](const HeaderLookup& header) { state_->Acknowledge(header); });
  }
  std::optional<std::vector<std::string>> Closing() override {
    // What cannot be proven finished stays unacknowledged: the server frees
    // it when this process goes.
    const std::optional<std::vector<std::string>> ids = state_->acks->Take(false, /*wait=*/true).ids;
    if (!ids) return std::nullopt;
    return std::vector<std::string>{ExportsDoneHeader(*ids)};
  }

 private:
  std::shared_ptr<SessionState> state_;
};

}  // namespace

std::unique_ptr<ClientTransport> MakeCudaIpcClient(const ClientTransportOptions& options) {
  return std::make_unique<CudaIpcClient>(options);
}

}  // namespace tesscpp::gpu_transport
