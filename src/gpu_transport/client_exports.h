// client_exports.h: what a client owes a GPU-transport server: the
// acknowledgement of its exports, and the leases of borrowed outputs (internal).
#pragma once

#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_transport/headers.h"
#include "tesscpp/cuda.h"

namespace tesscpp::gpu_transport {

// The header acknowledging `ids` (empty: this client acknowledges, none yet;
// libcurl drops a header written "Name: " and sends "Name;" as an empty one).
inline std::string ExportsDoneHeader(const std::vector<std::string>& ids) {
  if (ids.empty()) return std::string(kExportsDoneHeader) + ";";
  std::string header = std::string(kExportsDoneHeader) + ": ";
  for (size_t i = 0; i < ids.size(); ++i) header += (i > 0 ? "," : "") + ids[i];
  return header;
}

// Tesseract-Exports-Done: ids of server exports this client is done with,
// sent with the next request (as the SDK does), and by a GET /health on close.
// Shared with the leases of borrowed outputs, which add theirs later.
class ExportAcks {
 public:
  // Whether the device work that may still read an export is done, waiting
  // for it first when asked to (an id without one may leave at once); an
  // error where that cannot be proven (a failed query or wait).
  using Ready = std::function<Result<bool>(bool wait)>;

  // What may be acknowledged now, and why some could not be (the ids whose
  // completion could not be proven stay held: acknowledging them would let
  // the server reuse memory that device work may still read).
  struct Taken {
    std::optional<std::vector<std::string>> ids;
    Status unproven;
  };

  void Add(std::string id, Ready ready = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({std::move(id), std::move(ready)});
  }
  void Requeue(const std::vector<std::string>& ids) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& id : ids) pending_.push_back({id, nullptr});
  }
  // The ids that may leave now (nullopt when there are none and `always` is
  // false). Without `wait`, one whose device work is still running stays for
  // a later request: the call never waits for the user's kernels.
  Taken Take(bool always, bool wait) {
    std::vector<Pending> pending;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending = std::exchange(pending_, {});
    }
    Taken taken;
    std::vector<std::string> ids;
    std::vector<Pending> later;
    for (Pending& p : pending) {  // outside the lock: a wait may be long
      Result<bool> ready = p.ready == nullptr ? Result<bool>(true) : p.ready(wait);
      if (ready.ok() && *ready) {
        ids.push_back(std::move(p.id));
        continue;
      }
      if (!ready.ok() && taken.unproven.ok()) {
        taken.unproven = ready.status().WithContext(
            "the device work on the borrowed outputs of an earlier call cannot be proven finished; its "
            "export stays held");
      }
      later.push_back(std::move(p));
    }
    if (!later.empty()) {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.insert(pending_.begin(), std::make_move_iterator(later.begin()),
                      std::make_move_iterator(later.end()));
    }
    if (always || !ids.empty()) taken.ids = std::move(ids);
    return taken;
  }

 private:
  struct Pending {
    std::string id;
    Ready ready;
  };
  std::mutex mutex_;
  std::vector<Pending> pending_;
};

// When the user's device work on borrowed outputs of `devices` is done: marks
// on the devices' legacy default streams, taken now (the outputs are going).
// Where a mark cannot be taken, the devices are synchronised before the id
// leaves, as nothing narrower is known. A failed query, wait or
// synchronisation proves nothing: an error, and the id is not acknowledged.
inline ExportAcks::Ready AfterDeviceWork(const std::vector<int>& devices) {
  if (devices.empty()) return nullptr;
  std::vector<cuda::StreamMark> marks;
  for (int device : devices) {
    Result<cuda::StreamMark> mark = cuda::StreamMark::OnLegacyStream(device);
    if (!mark.ok()) {
      return [devices](bool) -> Result<bool> {
        for (int d : devices) TESS_RETURN_IF_ERROR(cuda::SynchronizeDevice(d));
        return true;
      };
    }
    marks.push_back(*std::move(mark));
  }
  return [marks = std::move(marks)](bool wait) -> Result<bool> {
    for (const cuda::StreamMark& mark : marks) {
      if (wait) {
        TESS_RETURN_IF_ERROR(mark.Wait());
        continue;
      }
      TESS_ASSIGN_OR_RETURN(const bool reached, mark.Reached());
      if (!reached) return false;
    }
    return true;
  };
}

// Held by every CUDA output borrowed from one response (docs/gpu-transport-protocol.md
// 11): when the last is gone, the export id is acknowledged. Holds `server`
// (the served server, if the client started it), so that tearing the
// Tesseract down does not free memory the outputs still read.
class BorrowedOutputs {
 public:
  BorrowedOutputs(std::string export_id, std::weak_ptr<ExportAcks> acks, std::shared_ptr<void> server)
      : export_id_(std::move(export_id)), acks_(std::move(acks)), server_(std::move(server)) {}
  ~BorrowedOutputs() {
    if (auto queue = acks_.lock()) queue->Add(std::move(export_id_), AfterDeviceWork(devices_));
  }
  BorrowedOutputs(const BorrowedOutputs&) = delete;
  BorrowedOutputs& operator=(const BorrowedOutputs&) = delete;
  // Where the borrowed outputs are (known once they are decoded).
  void set_devices(std::vector<int> devices) { devices_ = std::move(devices); }

 private:
  std::string export_id_;
  std::vector<int> devices_;
  std::weak_ptr<ExportAcks> acks_;  // gone with the session: the server then frees at our exit
  std::shared_ptr<void> server_;
};

}  // namespace tesscpp::gpu_transport
