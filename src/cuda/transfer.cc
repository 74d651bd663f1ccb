// transfer.cc: host-to-device copies on a per-thread stream; pageable
// sources are staged through pinned slots by a pool of staging threads.
#include "tesscpp/internal/cuda/cuda_transfer.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/cuda_api.h"
#include "tesscpp/cuda.h"

namespace tesscpp::cuda {

using internal::CudaEvent;
using internal::CudaStatus;
using internal::CudaStream;
using internal::DeviceGuard;
using internal::PinnedBuffer;

namespace {

// Measured on an H200 host (16 cores, PCIe Gen5; bench/results/h2d-probe-*):
// pageable -> device with 8-12 threads each filling its own 4 MiB slots and
// starting the slot's DMA reaches 51 GB/s, against 55 for pinned sources;
// 32 MiB slots filled by all threads together (fork-join) reached 24-31.
constexpr int64_t kSlotBytes = int64_t{4} << 20;
constexpr int kSlotsPerWorker = 2;  // one being filled while the other's DMA runs
constexpr unsigned kMaxWorkers = 12;

// A piece of one copy: at most one slot's worth.
struct Piece {
  void* destination;
  const void* source;
  int64_t nbytes;
};

// The work of one slot: consecutive pieces of at most kSlotBytes together
// (many small copies share a slot; a large copy takes whole slots).
using Job = std::vector<Piece>;

// One CopyHostToDevice call's jobs, taken by the staging threads.
struct Batch {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::vector<Job> jobs;
  std::atomic<size_t> next{0};
  std::mutex mutex;
  Status failure;  // the first
  std::atomic<bool> failed{false};
};

// Pinned slots of one staging thread on one device, each with the event its
// last DMA recorded (the slot may be refilled once that fired).
struct Slots {
  std::vector<PinnedBuffer> buffers;
  std::vector<CudaEvent> free;
  int next = 0;

  static Result<Slots> Make() {
    Slots slots;
    for (int i = 0; i < kSlotsPerWorker; ++i) {
      TESS_ASSIGN_OR_RETURN(PinnedBuffer buffer, internal::AllocatePinned(kSlotBytes));
      TESS_ASSIGN_OR_RETURN(CudaEvent event, internal::CreateEvent());
      slots.buffers.push_back(std::move(buffer));
      slots.free.push_back(std::move(event));
    }
    return slots;
  }
};

// Enqueues the DMAs of `pieces` (pinned sources): one call for one, a batch
// for many (on an H200, 1000 copies of 64 KiB ran at 39 GB/s as one batch and
// at 17 GB/s as separate calls).
Status StartDma(std::span<const Piece> pieces, cudaStream_t stream) {
#if CUDART_VERSION >= 13000  // the batch call's signature as of CUDA 13
  if (pieces.size() > 1) {
    std::vector<void*> destinations;
    std::vector<const void*> sources;
    std::vector<size_t> sizes;
    for (const Piece& piece : pieces) {
      destinations.push_back(piece.destination);
      sources.push_back(piece.source);
      sizes.push_back(static_cast<size_t>(piece.nbytes));
    }
    cudaMemcpyAttributes attributes{};
    attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t first = 0;
    return CudaStatus(cudaMemcpyBatchAsync(destinations.data(), sources.data(), sizes.data(),
                                           destinations.size(), &attributes, &first, 1, stream),
                      "cudaMemcpyBatchAsync");
  }
#endif
  for (const Piece& piece : pieces) {
    TESS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        piece.destination, piece.source, static_cast<size_t>(piece.nbytes), cudaMemcpyHostToDevice, stream));
  }
  return Status::OK();
}

// Copies a job's pieces into a free slot and starts their DMA from there.
Status StageJob(const Job& job, Slots& slots, cudaStream_t stream) {
  const int slot = slots.next;
  slots.next = (slot + 1) % kSlotsPerWorker;
  TESS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slots.free[slot].get()));
  auto* staging = static_cast<uint8_t*>(slots.buffers[slot].get());
  Job staged;
  staged.reserve(job.size());
  for (const Piece& piece : job) {
    std::memcpy(staging, piece.source, static_cast<size_t>(piece.nbytes));
    staged.push_back({piece.destination, staging, piece.nbytes});
    staging += piece.nbytes;
  }
  TESS_RETURN_IF_ERROR(StartDma(staged, stream));
  return CudaStatus(cudaEventRecord(slots.free[slot].get(), stream), "cudaEventRecord");
}

// Threads that stage pageable sources; each owns its slots, per device.
class StagingThreads {
 public:
  static StagingThreads& Instance() {
    static auto* threads = new StagingThreads(  // leaked: workers run until exit
        static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, kMaxWorkers)));
    return *threads;
  }

  // Returns once every job's DMA has been enqueued on batch.stream (or one failed).
  void Run(Batch& batch) {
    const auto helpers = static_cast<ptrdiff_t>(std::min<size_t>(batch.jobs.size(), workers_));
    std::latch done(helpers);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (ptrdiff_t i = 0; i < helpers; ++i) {
        tasks_.emplace_back([&batch, &done](std::map<int, Slots>& slots) {
          Drain(batch, slots);
          done.count_down();
        });
      }
    }
    ready_.notify_all();
    done.wait();
  }

 private:
  using Task = std::function<void(std::map<int, Slots>&)>;

  explicit StagingThreads(int workers) : workers_(static_cast<size_t>(workers)) {
    for (int i = 0; i < workers; ++i) std::thread([this] { Work(); }).detach();
  }

  static void Drain(Batch& batch, std::map<int, Slots>& slots) {
    Status status = [&]() -> Status {
      TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(batch.device));
      auto mine = slots.find(batch.device);
      if (mine == slots.end()) {
        TESS_ASSIGN_OR_RETURN(Slots made, Slots::Make());
        mine = slots.emplace(batch.device, std::move(made)).first;
      }
      for (size_t i; !batch.failed && (i = batch.next.fetch_add(1)) < batch.jobs.size();) {
        TESS_RETURN_IF_ERROR(StageJob(batch.jobs[i], mine->second, batch.stream));
      }
      return Status::OK();
    }();
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(batch.mutex);
      if (batch.failure.ok()) batch.failure = std::move(status);
      batch.failed = true;
    }
  }

  void Work() {
    std::map<int, Slots> slots;  // this thread's, per device
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task(slots);
    }
  }

  const size_t workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
};

// The calling thread's transfer stream per device.
Result<cudaStream_t> StreamFor(int device) {
  thread_local std::map<int, CudaStream> streams;
  auto found = streams.find(device);
  if (found == streams.end()) {
    TESS_ASSIGN_OR_RETURN(CudaStream stream, internal::CreateStream());
    found = streams.emplace(device, std::move(stream)).first;
  }
  return found->second.get();
}

// Whether the driver knows `p` as page-locked host memory (cudaHostAlloc,
// cudaHostRegister: torch's pin_memory). Asked here rather than of the
// caller: torch's is_pinned() costs ~1 µs per tensor from Python, a large
// part of a 64 KiB tensor's budget.
bool PageLocked(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky, but not left for the next call to report
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// Pinned sources go straight to DMA; pageable ones become slot-sized jobs.
Status Submit(std::span<const HostToDeviceCopy> copies, Batch& batch) {
  int64_t filled = kSlotBytes;  // of the last job
  std::vector<Piece> pinned;
  for (const HostToDeviceCopy& copy : copies) {
    if (copy.nbytes > 0 && (copy.source == nullptr || copy.destination == nullptr)) {
      return Status::InvalidArgument("a copy of ", copy.nbytes, " bytes has a null source or destination");
    }
    auto* destination = static_cast<uint8_t*>(copy.destination);
    const auto* source = static_cast<const uint8_t*>(copy.source);
    if (copy.nbytes > 0 && PageLocked(source)) {
      pinned.push_back({destination, source, copy.nbytes});
      continue;
    }
    for (int64_t at = 0; at < copy.nbytes; at += kSlotBytes) {
      const int64_t length = std::min(kSlotBytes, copy.nbytes - at);
      if (filled + length > kSlotBytes) {
        batch.jobs.emplace_back();
        filled = 0;
      }
      batch.jobs.back().push_back({destination + at, source + at, length});
      filled += length;
    }
  }
  if (!pinned.empty()) TESS_RETURN_IF_ERROR(StartDma(pinned, batch.stream));
  if (!batch.jobs.empty()) StagingThreads::Instance().Run(batch);
  return batch.failure;
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

Status CheckDevice(int device) {
  TESS_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (device < 0 || device >= count) {
    return Status::InvalidArgument("CUDA device ", device, " does not exist (", count, " visible)");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<TransferDone>> CopyHostToDevice(std::span<const HostToDeviceCopy> copies, int device,
                                                       uintptr_t consumer_stream) {
  TESS_RETURN_IF_ERROR(CheckDevice(device));
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(device));
  Batch batch;
  batch.device = device;
  TESS_ASSIGN_OR_RETURN(batch.stream, StreamFor(device));
  Status submitted = Submit(copies, batch);
  auto done = submitted.ok() ? internal::CreateEvent() : Result<CudaEvent>(submitted);
  if (done.ok()) {
    submitted = CudaStatus(cudaEventRecord(done->get(), batch.stream), "cudaEventRecord");
  }
  if (submitted.ok() && done.ok()) {
    submitted = CudaStatus(cudaStreamWaitEvent(internal::StreamFromInteger(consumer_stream), done->get(), 0),
                           "cudaStreamWaitEvent");  // NOLINT(performance-no-int-to-ptr): CUDA names memory
                                                    // and streams by integer
  }
  if (!submitted.ok() || !done.ok()) {
    // Nothing may unwind while a submitted copy still reads or writes.
    internal::LogIfFailed(CudaStatus(cudaStreamSynchronize(batch.stream), "cudaStreamSynchronize"));
    return submitted.ok() ? done.status() : submitted;
  }
  return std::unique_ptr<TransferDone>(new EventDone(*std::move(done), device));
}

Result<uintptr_t> TransferStream(int device) {
  TESS_RETURN_IF_ERROR(CheckDevice(device));
  TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(device));
  TESS_ASSIGN_OR_RETURN(cudaStream_t stream, StreamFor(device));
  return reinterpret_cast<uintptr_t>(stream);
}

}  // namespace tesscpp::cuda
