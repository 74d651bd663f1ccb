// call_guard.h: a worker process that dies in a call (a segfault in a
// component's native code) costs only the calls it was computing: its
// supervisor answers them 500 and starts another worker (docs/serving.md,
// "Workers that crash").
//
// How the supervisor knows what to answer: a worker hands it a duplicate of
// every connection it accepts (SCM_RIGHTS, over a Unix socket pair of the
// worker's slot) and says when it closes one; while a thread of the worker
// computes an answer, the connection's id sits in that thread's cell of a
// table in shared memory. A call crosses no process boundary — two stores
// into the table — and a connection two messages. When the worker dies, the
// supervisor reads whatever the worker sent, answers the connections the
// table names with a 500, and closes the others (the client sees an idle
// keep-alive connection close, and opens another).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "tesscpp/internal/platform/file.h"
#include "tesscpp/result.h"

namespace tesscpp::http {

/// \brief Threads of one worker process that may be inside a call at once
/// (HttpServer's event-loop threads).
inline constexpr int kCallThreads = 2;

/// \brief The shared table: per worker slot and thread, the id of the
/// connection whose call is being computed (0: none).
struct CallTable {
  static constexpr int kMaxSlots = 1024;  // as ServerMetrics::kMaxWorkers
  std::atomic<uint64_t> in_call[kMaxSlots][kCallThreads];

  /// \brief A zeroed table in a memfd (so exec'd workers map it too); null
  /// when it cannot be made.
  static CallTable* Create(platform::Fd& fd);
  /// \brief Maps the table of `fd` (Create's).
  static CallTable* Map(int fd);
};

/// \brief The worker's side: tells its supervisor about connections and calls.
class CallReporter {
 public:
  /// `channel` is this worker's end of the slot's socket pair.
  CallReporter(CallTable* table, int slot, platform::Fd channel);

  /// \brief Which cell of the slot the calling thread writes (0 to
  /// kCallThreads - 1); each event-loop thread says so once, as it starts.
  static void SetThreadCell(int cell);

  /// \brief Hands the supervisor a duplicate of an accepted connection.
  /// Returns its id, or 0 when the supervisor could not be told (the
  /// connection is then served unguarded).
  uint64_t Accepted(int connection_fd);
  /// \brief The connection `id` (Accepted's; 0 is ignored) is closed.
  void Closed(uint64_t id);
  /// \brief The calling thread computes the answer of connection `id` / is done.
  void Begin(uint64_t id);
  void End();

 private:
  CallTable* table_;
  int slot_;
  platform::Fd channel_;
  std::atomic<uint64_t> next_id_{1};
};

/// \brief The supervisor's side: holds the workers' connections and answers
/// those of a worker that died in a call.
class CallGuard {
 public:
  /// \brief Makes the table; kResourceExhausted when memory cannot be mapped.
  static Result<std::unique_ptr<CallGuard>> Create();
  ~CallGuard();
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

  CallTable* table() const { return table_; }
  int table_fd() const { return table_fd_.get(); }

  /// \brief A fresh socket pair for `slot`'s next worker (forgetting what the
  /// last one left); returns the worker's end, to be inherited by it.
  Result<platform::Fd> Open(int slot);
  /// \brief The supervisor's ends of the slots' channels, to wait on.
  std::vector<std::pair<int, int>> Channels() const;  // (fd, slot)
  /// \brief Takes in what `slot`'s worker has sent (non-blocking).
  void Read(int slot);
  /// \brief After the worker of `slot` ended: reads what it sent, answers a
  /// 500 on each connection whose call it was computing, closes every
  /// connection it held. Returns how many calls were answered.
  int Settle(int slot);
  /// \brief In a freshly forked worker: closes the supervisor's descriptors
  /// (the connections of other workers must not stay open through it).
  /// Async-signal-safe: only close(2).
  void CloseInChild() const;

 private:
  struct Slot {
    platform::Fd channel;                   // the supervisor's end
    std::map<uint64_t, platform::Fd> held;  // connection id -> our duplicate
  };
  CallGuard(CallTable* table, platform::Fd table_fd) : table_(table), table_fd_(std::move(table_fd)) {}

  CallTable* table_;
  platform::Fd table_fd_;
  std::map<int, Slot> slots_;
};

}  // namespace tesscpp::http
