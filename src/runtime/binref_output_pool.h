// binref_output_pool.h: pre-faulted files for large json+binref answers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::runtime {

/// \brief Files whose pages are allocated ahead of the answers that need them.
///
/// A json+binref answer hands its files to the caller, so every answer needs
/// fresh pages; on tmpfs allocating them while the caller waits is most of the
/// time of a large answer (docs/serving.md). This pool keeps spare files of the
/// sizes recent answers took, allocated by a background thread, and gives one
/// to BinrefWriter, which renames it into the run directory. Spare bytes stay
/// within a budget; the files and their directory are removed with the pool.
class BinrefOutputPool {
 public:
  /// Spare files kept per recent size.
  static constexpr int kSparesPerSize = 2;
  /// Recent sizes (distinct) the pool keeps spares of.
  static constexpr size_t kSizes = 4;

  /// \brief A pool in `dir` (created; it must be on the filesystem the answers
  /// are written to) holding at most `max_bytes` of spare files.
  static Result<std::unique_ptr<BinrefOutputPool>> Create(std::string dir, int64_t max_bytes);
  ~BinrefOutputPool();
  BinrefOutputPool(const BinrefOutputPool&) = delete;
  BinrefOutputPool& operator=(const BinrefOutputPool&) = delete;

  /// \brief The path of a spare file of `size` to `2 * size` bytes, now the
  /// caller's, or nullopt when none is ready (the pool prepares some for
  /// next time). A BinrefWriter::FileSource.
  std::optional<std::string> Take(int64_t size);

  /// \brief Spare files ready now and their bytes (for tests and metrics).
  struct Spares {
    size_t files = 0;
    int64_t bytes = 0;
  };
  Spares spares() const;

  /// \brief Blocks until the background thread has nothing left to prepare or remove.
  void WaitIdle() const;

 private:
  BinrefOutputPool(std::string dir, int64_t max_bytes);
  void Run();
  // What the thread should prepare next (0: nothing); called with mutex_ held.
  int64_t NextSize() const;
  // Whether spares of sizes no longer asked for wait to be removed; mutex_ held.
  bool HasStale() const;

  struct Spare {
    std::string path;
    int64_t size;
  };

  const std::string dir_;
  const int64_t max_bytes_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<Spare> ready_;
  std::deque<int64_t> recent_;  // most recent first, distinct
  int64_t ready_bytes_ = 0;
  bool busy_ = false;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::thread thread_;
};

}  // namespace tesscpp::runtime
