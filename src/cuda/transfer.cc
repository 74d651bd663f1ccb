// transfer.cc: host-to-device copies through pinned staging slots on a
// per-thread stream, pageable sources read by a pool of copy threads.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/cuda_api.h"
#include "tesscpp/cuda.h"
#include "tesscpp/cuda_transfer.h"

namespace tesscpp::cuda {

using internal::CudaEvent;
using internal::CudaStatus;
using internal::CudaStream;
using internal::DeviceGuard;
using internal::PinnedBuffer;

namespace {

constexpr int64_t kSlotBytes = int64_t{32} << 20;  // large enough for full PCIe speed
constexpr int kSlots = 4;
constexpr int64_t kParallelThreshold = int64_t{1} << 20;  // below this one thread copies

// Threads that share large memcpys from pageable memory into staging.
class CopyThreads {
 public:
  static CopyThreads& Instance() {
    static auto* threads = new CopyThreads(  // leaked: workers run until exit
        static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 8U)));
    return *threads;
  }

  void Copy(uint8_t* destination, const uint8_t* source, int64_t nbytes) {
    if (nbytes < kParallelThreshold || workers_ == 1) {
      std::memcpy(destination, source, static_cast<size_t>(nbytes));
      return;
    }
    const int64_t piece = (nbytes + workers_ - 1) / workers_;
    const auto pieces = static_cast<ptrdiff_t>((nbytes + piece - 1) / piece);
    std::latch done(pieces);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int64_t at = 0; at < nbytes; at += piece) {
        const auto length = static_cast<size_t>(std::min(piece, nbytes - at));
        tasks_.emplace_back([=, &done] {
          std::memcpy(destination + at, source + at, length);
          done.count_down();
        });
      }
    }
    ready_.notify_all();
    done.wait();
  }

 private:
  explicit CopyThreads(int workers) : workers_(workers) {
    for (int i = 0; i < workers; ++i) std::thread([this] { Work(); }).detach();
  }
  void Work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  const int workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
};

// What one thread keeps per device: its stream and a ring of staging slots,
// each with the event its last DMA recorded (the slot is free once it fired).
struct TransferContext {
  CudaStream stream;
  std::vector<PinnedBuffer> slots;
  std::vector<CudaEvent> slot_free;
  int next_slot = 0;

  static Result<std::unique_ptr<TransferContext>> Make() {
    TESS_ASSIGN_OR_RETURN(CudaStream stream, internal::CreateStream());
    auto context = std::unique_ptr<TransferContext>(new TransferContext{std::move(stream), {}, {}, 0});
    for (int i = 0; i < kSlots; ++i) {
      TESS_ASSIGN_OR_RETURN(PinnedBuffer slot, internal::AllocatePinned(kSlotBytes));
      TESS_ASSIGN_OR_RETURN(CudaEvent event, internal::CreateEvent());
      context->slots.push_back(std::move(slot));
      context->slot_free.push_back(std::move(event));
    }
    return context;
  }
};

Result<TransferContext*> ContextFor(int device) {
  thread_local std::map<int, std::unique_ptr<TransferContext>> contexts;
  auto& context = contexts[device];
  if (context == nullptr) {
    TESS_ASSIGN_OR_RETURN(context, TransferContext::Make());
  }
  return context.get();
}

Status Submit(TransferContext& context, const HostToDeviceCopy& copy) {
  auto* destination = static_cast<uint8_t*>(copy.destination);
  const auto* source = static_cast<const uint8_t*>(copy.source);
  if (copy.source_pinned) {
    return CudaStatus(cudaMemcpyAsync(destination, source, static_cast<size_t>(copy.nbytes),
                                      cudaMemcpyHostToDevice, context.stream.get()),
                      "cudaMemcpyAsync");
  }
  for (int64_t at = 0; at < copy.nbytes; at += kSlotBytes) {
    const int64_t length = std::min(kSlotBytes, copy.nbytes - at);
    const int slot = context.next_slot;
    context.next_slot = (slot + 1) % kSlots;
    // The slot's previous DMA must be done before its bytes are overwritten.
    TESS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(context.slot_free[slot].get()));
    auto* staging = static_cast<uint8_t*>(context.slots[slot].get());
    CopyThreads::Instance().Copy(staging, source + at, length);
    TESS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(destination + at, staging, static_cast<size_t>(length),
                                              cudaMemcpyHostToDevice, context.stream.get()));
    TESS_CUDA_RETURN_IF_ERROR(cudaEventRecord(context.slot_free[slot].get(), context.stream.get()));
  }
  return Status::OK();
}

class EventDone final : public TransferDone {
 public:
  explicit EventDone(CudaEvent event, int device) : event_(std::move(event)), device_(device) {}
  Status Wait() override {
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(device_));
    return CudaStatus(cudaEventSynchronize(event_.get()), "cudaEventSynchronize");
  }

 private:
  CudaEvent event_;
  int device_;
};

}  // namespace

Result<std::unique_ptr<TransferDone>> CopyHostToDevice(std::span<const HostToDeviceCopy> copies, int device,
                                                       uintptr_t consumer_stream) {
  TESS_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (device < 0 || device >= count) {
    return Status::InvalidArgument("CUDA device ", device, " does not exist (", count, " visible)");
  }
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(device));
  TESS_ASSIGN_OR_RETURN(TransferContext * context, ContextFor(device));
  Status submitted;
  for (const HostToDeviceCopy& copy : copies) {
    if (copy.nbytes > 0 && (copy.source == nullptr || copy.destination == nullptr)) {
      submitted =
          Status::InvalidArgument("a copy of ", copy.nbytes, " bytes has a null source or destination");
    }
    if (submitted.ok() && copy.nbytes > 0) submitted = Submit(*context, copy);
    if (!submitted.ok()) break;
  }
  auto done = submitted.ok() ? internal::CreateEvent() : Result<CudaEvent>(submitted);
  if (done.ok()) {
    submitted = CudaStatus(cudaEventRecord(done->get(), context->stream.get()), "cudaEventRecord");
  }
  if (submitted.ok() && done.ok()) {
    submitted = CudaStatus(cudaStreamWaitEvent(internal::StreamFromInteger(consumer_stream), done->get(), 0),
                           "cudaStreamWaitEvent");  // NOLINT(performance-no-int-to-ptr): CUDA names memory
                                                    // and streams by integer
  }
  if (!submitted.ok() || !done.ok()) {
    // Nothing may unwind while a submitted copy still reads or writes.
    internal::LogIfFailed(CudaStatus(cudaStreamSynchronize(context->stream.get()), "cudaStreamSynchronize"));
    return submitted.ok() ? done.status() : submitted;
  }
  return std::unique_ptr<TransferDone>(new EventDone(*std::move(done), device));
}

}  // namespace tesscpp::cuda
