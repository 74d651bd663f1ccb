// residual_store.h: what applies kept for the derivative calls at the same
// inputs, per server process (docs/forward-reuse.md).
//
// An entry is the state a component kept (component::Residual) and the
// request inputs it was made at. A derivative call refers to it by the
// reference its apply's answer carried; the entry is handed out only when
// the call's inputs are the same as the apply's (SameInputs: types, dtypes,
// shapes and bytes, floats bit for bit; never a hash), so a reference reused
// at another point recomputes instead of answering from the wrong state.
// Entries go when a client releases them, when they are older than the time
// limit, and least recently used first when a budget (host bytes, device
// bytes) would be passed; an entry larger than a budget is never kept.
// Thread-safe; state is destroyed outside the store's lock (a Python
// module's takes the GIL to go), and inputs are compared outside it too.
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

#include "runtime/kept_inputs.h"
#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"
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

  /// \brief Stores `residual`, made at `inputs` (a DetachedCopy where the
  /// component may change them in place), and returns
  /// its reference; nullopt when it is larger than a budget. The inputs
  /// count against the host budget with the residual's own bytes.
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
  /// of other processes and unknown ones are ignored), but for `used`, the
  /// reference of the call that brings the list: a call that names its own
  /// reference is done with it once it has run (the caller releases it then).
  /// Whether the list named `used`.
  bool Release(std::string_view references, std::string_view used = {});

  /// \brief The counts now (entries past the time limit dropped first, at
  /// most once a second).
  ResidualStats Stats();

  /// \brief For tests: the clock the time limit reads.
  void set_clock(std::function<Clock::time_point()> clock) { clock_ = std::move(clock); }

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const Value> inputs;
    std::shared_ptr<const component::Residual> residual;
    Clock::time_point made;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // The process part of references: a forked worker gets its own (and drops
  // what the process it was forked from had kept).
  const std::string& ProcessToken();
  void EvictExpired(Clock::time_point now);
  // Moves the entry to dropped_, which the public methods empty once they
  // have let go of the lock.
  void Drop(Lru::iterator entry, uint64_t ResidualStats::*counter);
  // The entry `reference` names, if it is this process's and still there.
  Lru::iterator Locate(std::string_view reference, std::string_view* miss);

  const ResidualLimits limits_;
  std::function<Clock::time_point()> clock_ = [] { return Clock::now(); };
  mutable std::mutex mutex_;
  Lru lru_;
  Lru dropped_;  // taken out under the lock, destroyed after it
  std::unordered_map<std::string_view, Lru::iterator> by_id_;
  ResidualStats stats_;
  Clock::time_point swept_;
  int owner_pid_ = 0;
  std::string token_;
};

}  // namespace tesscpp::runtime
