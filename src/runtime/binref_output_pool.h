// binref_output_pool.h: pre-faulted files for large json+binref answers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "platform/pool_dir.h"
#include "runtime/pool_worker.h"
#include "tesscpp/result.h"

namespace tesscpp::runtime {

/// \brief Files whose pages are allocated ahead of the answers that need them.
///
/// A json+binref answer hands its files to the caller, so every answer needs
/// fresh pages; on tmpfs allocating them while the caller waits is most of the
/// time of a large answer (docs/serving.md). This pool keeps spare files of the
/// sizes recent answers took, allocated by a background thread, and gives one
/// to BinrefWriter, which renames it into the run directory. Spare bytes stay
/// within a budget. The files live in the process's own hidden directory of
/// the output path (`.tesscpp-binref-pool-<pid>-<id>`, a platform::PoolDirectory): they
/// are removed with the pool, a new pool removes those whose owner is gone,
/// and a forked child neither takes nor removes its parent's spares.
class BinrefOutputPool {
 public:
  /// Spare files kept per recent size.
  static constexpr int kSparesPerSize = 2;
  /// Recent sizes (distinct) the pool keeps spares of.
  static constexpr size_t kSizes = 4;

  /// \brief A pool in `output_path` (which must exist; the answers' files are
  /// renamed from the pool into its run directories) holding at most
  /// `max_bytes` of spare files.
  static Result<std::unique_ptr<BinrefOutputPool>> Create(const std::string& output_path, int64_t max_bytes);
  ~BinrefOutputPool();
  BinrefOutputPool(const BinrefOutputPool&) = delete;
  BinrefOutputPool& operator=(const BinrefOutputPool&) = delete;

  /// \brief The path of a spare file of `size` to `2 * size` bytes, now the
  /// caller's, or nullopt when none is ready (the pool prepares some for
  /// next time) or in a forked child. A BinrefWriter::FileSource.
  std::optional<std::string> Take(int64_t size);

  /// \brief Spare files ready now and their bytes (for tests and metrics).
  struct Spares {
    size_t files = 0;
    int64_t bytes = 0;
  };
  Spares spares() const;
  /// \brief The pool's directory (for tests).
  const std::string& dir() const { return dir_.path(); }

  /// \brief Blocks until the background thread has nothing left to prepare or remove.
  void WaitIdle() const;

 private:
  BinrefOutputPool(platform::PoolDirectory dir, int64_t max_bytes);
  void Run();

  struct Spare {
    std::string path;
    int64_t size;
  };
  // What the thread shares with the callers (PoolWorker).
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Spare> ready;
    std::deque<int64_t> recent;  // most recent first, distinct
    int64_t ready_bytes = 0;
    bool busy = false;
    bool stopping = false;
    uint64_t next_id = 0;
    // What the thread should prepare next (0: nothing), within `max_bytes`;
    // called with `mutex` held.
    int64_t NextSize(int64_t max_bytes) const;
    // Whether spares of sizes no longer asked for wait to be removed; `mutex` held.
    bool HasStale() const;
  };

  const platform::PoolDirectory dir_;
  const int64_t max_bytes_;
  // Last: its thread starts in its constructor and reads the members above.
  PoolWorker<Shared> worker_{[this] { Run(); }};
};

}  // namespace tesscpp::runtime
