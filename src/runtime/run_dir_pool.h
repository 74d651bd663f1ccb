// run_dir_pool.h: run directories made before the calls that use them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "platform/pool_dir.h"
#include "runtime/pool_worker.h"
#include "tesscpp/internal/platform/file.h"
#include "tesscpp/result.h"

namespace tesscpp::runtime {

/// \brief Spare run directories, so a call without a run_id costs one
/// rename(2) instead of creating its directory tree.
///
/// Every call of a wrapped endpoint gets `run_<uuid4>/logs/` with its files
/// (CreateRunDirectory): three mkdirs and two file creations, 20-70 µs of a
/// call that may take 50 µs in all (docs/serving.md, "Run directories"). A
/// call that names no run_id does not care when its directory was made, so a
/// background thread makes a few ahead, under fresh uuid4s, in a hidden
/// directory of the output path (`.tesscpp-run-pool-<pid>-<id>`, on the same
/// filesystem, so renaming one out is atomic and cheap; platform::PoolDirectory). Spares
/// nobody took are removed with the pool, and a new pool removes those whose
/// owner is gone. A forked child does not use or remove its parent's pool
/// (Take answers nullopt there).
class RunDirectoryPool {
 public:
  /// Spare directories kept ready.
  static constexpr size_t kSpares = 2;

  /// \brief A pool for `output_path` (which must exist), whose spares are made
  /// as CreateRunDirectory(dir, tracked_in_files) makes them.
  static Result<std::unique_ptr<RunDirectoryPool>> Create(const std::string& output_path,
                                                          bool tracked_in_files);
  ~RunDirectoryPool();
  RunDirectoryPool(const RunDirectoryPool&) = delete;
  RunDirectoryPool& operator=(const RunDirectoryPool&) = delete;

  /// \brief A run directory taken out of the pool.
  struct PreparedRun {
    std::string id;    // its uuid4, the run_id
    std::string dir;   // <output_path>/run_<id>
    platform::Fd log;  // its logs/tesseract.log, open for appending
  };
  /// \brief A spare, now `<output_path>/run_<id>` and the caller's; nullopt
  /// when none is ready (the caller makes its own, and the pool makes more).
  std::optional<PreparedRun> Take();

  /// \brief Spares ready now (for tests).
  size_t spares() const;
  /// \brief Blocks until the background thread has made every spare it will.
  void WaitIdle() const;

 private:
  RunDirectoryPool(std::string output_path, platform::PoolDirectory dir, bool tracked_in_files);
  // The background thread: keeps kSpares spares ready.
  void Fill();

  struct Spare {
    std::string id;
    platform::Fd log;
  };
  // What the thread shares with the callers (PoolWorker).
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Spare> ready;
    bool failed = false;  // making a spare failed: wait for the next Take before trying again
    bool stopping = false;
  };

  const std::string output_path_;
  const platform::PoolDirectory dir_;
  const bool tracked_in_files_;
  // Last: its thread starts in its constructor and reads the members above.
  PoolWorker<Shared> worker_{[this] { Fill(); }};
};

}  // namespace tesscpp::runtime
