// client_exports.h: what a client owes a GPU-transport server: the
// acknowledgement of its exports, and the leases of borrowed outputs (internal).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
  // `devices`: where device work may still read the exports (borrowed
  // outputs); waited for before the id leaves.
  void Add(std::string id, std::vector<int> devices = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.push_back(std::move(id));
    devices_.insert(devices.begin(), devices.end());
  }
  void Requeue(const std::vector<std::string>& ids) {
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
  }
  // The ids to send (nullopt when there are none and `always` is false).
  std::optional<std::vector<std::string>> Take(bool always) {
    std::vector<std::string> ids;
    std::set<int> devices;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!always && ids_.empty()) return std::nullopt;
      ids = std::exchange(ids_, {});
      devices = std::exchange(devices_, {});
    }
    // The user's kernels may still read borrowed outputs; the server may
    // reuse the memory once acknowledged. (A failed wait leaves nothing
    // better to do than to acknowledge: the device is unusable anyway.)
    for (int device : devices) (void)cuda::SynchronizeDevice(device);
    return ids;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> ids_;
  std::set<int> devices_;
};

// Held by every CUDA output borrowed from one response (docs/gpu-transport.md
// 13): when the last is gone, the export id is acknowledged. Holds `server`
// (the served server, if the client started it), so that tearing the
// Tesseract down does not free memory the outputs still read.
class BorrowedOutputs {
 public:
  BorrowedOutputs(std::string export_id, std::weak_ptr<ExportAcks> acks, std::shared_ptr<void> server)
      : export_id_(std::move(export_id)), acks_(std::move(acks)), server_(std::move(server)) {}
  ~BorrowedOutputs() {
    if (auto queue = acks_.lock()) queue->Add(std::move(export_id_), std::move(devices_));
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
