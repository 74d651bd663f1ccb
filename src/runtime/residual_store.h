// residual_store.h: what applies kept for the derivative calls at the same
// inputs, per server process (docs/forward-reuse.md).
//
// An entry is the state a component kept (component::Residual) and the
// request inputs it was made at. A derivative call refers to it by the
// reference its apply's answer carried; the entry is handed out only when
// the call's inputs equal the apply's (deep Value equality: types, dtypes,
// shapes and bytes, never a hash), so a reference reused at another point
// recomputes instead of answering from the wrong state. Entries go when a
// client releases them, when they are older than the time limit, and least
// recently used first when a budget (host bytes, device bytes) would be
// passed; an entry larger than a budget is never kept. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

struct ResidualLimits {
  int64_t host_bytes = int64_t{1} << 30;    ///< TESSCPP_RESIDUAL_HOST_MIB (default 1 GiB)
  int64_t device_bytes = int64_t{1} << 30;  ///< TESSCPP_RESIDUAL_DEVICE_MIB (default 1 GiB)
  std::chrono::seconds ttl{600};            ///< TESSCPP_RESIDUAL_TTL_S (default 10 min)
};

class ResidualStore {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ResidualStore(ResidualLimits limits);

  /// \brief Stores `residual`, made at `inputs`, and returns its reference;
  /// nullopt when it is larger than a budget. The inputs' tensors count
  /// against the host budget with the residual's own bytes.
  std::optional<std::string> Put(Value inputs, component::Residual residual);

  /// \brief The state `reference` names when it was made at `inputs`; else
  /// null and why ("unknown", "another process", "inputs differ",
  /// "malformed"). A hit makes the entry the most recently used.
  struct Found {
    std::shared_ptr<const component::Residual> residual;
    std::string_view miss;  ///< empty on a hit
  };
  Found Find(std::string_view reference, const Value& inputs);

  /// \brief Drops the entries of a comma-separated list of references (those
  /// of other processes and unknown ones are ignored).
  void Release(std::string_view references);

  ResidualStats Stats() const;

  /// \brief For tests: the clock the time limit reads.
  void set_clock(std::function<Clock::time_point()> clock) { clock_ = std::move(clock); }

 private:
  struct Entry {
    std::string id;
    Value inputs;
    std::shared_ptr<const component::Residual> residual;
    Clock::time_point made;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // The process part of references: a forked worker gets its own (and drops
  // what the process it was forked from had kept).
  const std::string& ProcessToken();
  void EvictExpired(Clock::time_point now);
  void Drop(Lru::iterator entry, uint64_t ResidualStats::*counter);

  const ResidualLimits limits_;
  std::function<Clock::time_point()> clock_ = [] { return Clock::now(); };
  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::string_view, Lru::iterator> by_id_;
  ResidualStats stats_;
  int owner_pid_ = 0;
  std::string token_;
};

}  // namespace tesscpp::runtime
