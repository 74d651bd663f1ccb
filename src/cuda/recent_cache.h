// recent_cache.h: what a peer's handles opened here, for the ones seen last
// (internal).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::cuda::internal {

/// \brief Opened peer resources (IPC mappings, events, VMM mappings) by key,
/// the `capacity` used last: a peer sending the same handles call after call
/// (a caching allocator's segments, a staging pool, its one event per device)
/// has them opened once. Keys must name one live resource of the peer (a
/// legacy handle, a block id that is never reused), so a hit is always what
/// the descriptor means. What is evicted is released when its last user is
/// done, outside the lock.
template <typename Opened>
class RecentCache {
 public:
  explicit RecentCache(size_t capacity) : capacity_(capacity) {}

  /// \brief The entry for `key`, opened by `open()` (a Result of a
  /// shared_ptr) on a miss; `*hit` says which.
  template <typename Open>
  Result<std::shared_ptr<Opened>> Get(std::string key, const Open& open, bool* hit = nullptr) {
    std::shared_ptr<Opened> evicted;  // released outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        if (hit != nullptr) *hit = true;
        return it->second;
      }
    }
    if (hit != nullptr) *hit = false;
    TESS_ASSIGN_OR_RETURN(std::shared_ptr<Opened> opened, open());
    entries_.emplace_front(std::move(key), opened);
    if (entries_.size() > capacity_) {
      evicted = std::move(entries_.back().second);
      entries_.pop_back();
    }
    return opened;
  }

  /// \brief Drops the entries whose key `dead(key)` says are gone; does
  /// nothing when another thread holds the cache (Get keeps it while it
  /// opens, which may wait on a peer whose own sweep must not wait on us).
  template <typename Dead>
  void TryRemoveIf(const Dead& dead) {
    std::vector<std::shared_ptr<Opened>> evicted;  // released outside the lock
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (dead(it->first)) {
        evicted.push_back(std::move(it->second));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<Opened>>> entries_;
};

}  // namespace tesscpp::cuda::internal
