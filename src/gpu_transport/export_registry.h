// export_registry.h: what a GPU-transport server keeps for its clients (internal).
//
// The device memory a response exports (its outputs, or the staging copies of
// them) must stay untouched until the client has copied it out. As in
// tesseract-core 1.15 (docs/gpu-transport-protocol.md 5): each response's exports are
// kept under a random id sent as `Tesseract-Exports`, and released when a
// later request names the id in `Tesseract-Exports-Done`, after 300 s, or, for
// clients that never send that header, at their next call.
//
// tesscpp's lease (docs/gpu-transport-protocol.md 11): a client that borrows outputs
// instead of copying them names its process; its groups are then kept until
// acknowledged or until that process is gone, without the 300 s timeout.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "platform/process_identity.h"
#include "tesscpp/value.h"

namespace tesscpp::gpu_transport {

class ExportRegistry {
 public:
  static constexpr std::chrono::seconds kTimeout{300};  // EXPORTS_TIMEOUT_S
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  /// \brief `clock` tells the time for the timeout (tests move it forward).
  explicit ExportRegistry(Clock clock = std::chrono::steady_clock::now) : clock_(std::move(clock)) {}

  /// \brief Every request, before routing: a non-empty Tesseract-Exports-Done
  /// releases the ids it names (split on ',', untrimmed, unknown ids ignored)
  /// and every group past the timeout.
  void OnRequest(const std::optional<std::string>& exports_done);

  /// \brief Before a wrapped endpoint runs: releases groups past the timeout
  /// and, unless this request acknowledges exports, every group kept for a
  /// client that does not.
  void BeforeEndpoint(bool acknowledged);

  /// \brief Keeps a response's exports; returns the id for Tesseract-Exports,
  /// or nullopt (nothing kept) when `pins` is empty. With a `borrower`, the
  /// group is kept for that process (see above).
  std::optional<std::string> Keep(std::vector<std::shared_ptr<void>> pins, bool acknowledged,
                                  std::optional<platform::ProcessIdentity> borrower = std::nullopt);

  /// \brief Groups held now (for tests and logs).
  size_t size() const;

 private:
  struct Group {
    std::vector<std::shared_ptr<void>> pins;
    std::chrono::steady_clock::time_point kept_at;
    bool acknowledged = false;
    std::optional<platform::ProcessIdentity> borrower;
  };
  // The groups past their lifetime (the timeout, or their borrower's) are
  // released along with those for which `drop` is true.
  template <typename Drop>
  void ReleaseExpiredAnd(const Drop& drop);
  // Removes groups for which `drop` is true; they are freed after the lock is
  // released (freeing device memory may synchronise the device).
  template <typename Drop>
  void ReleaseIf(const Drop& drop);

  const Clock clock_;
  mutable std::mutex mutex_;
  std::map<std::string, Group> groups_;
};

}  // namespace tesscpp::gpu_transport
