// pool_worker.h: a pool's background thread and the state it shares.
#pragma once

#include <unistd.h>

#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace tesscpp::runtime {

/// \brief The background thread of a pool (RunDirectoryPool,
/// BinrefOutputPool) and the state it shares with the pool's callers: a
/// `Shared` with `mutex`, `changed` (a condition variable) and `stopping`.
///
/// Both live on the heap so that a forked child can drop them unfinished:
/// the child has no such thread to join, and its mutex and condition
/// variable are copies of the parent's, which may be held or waited on there,
/// so destroying them could block for ever.
template <typename Shared>
class PoolWorker {
 public:
  /// \brief Starts `run` on the thread (after the shared state exists).
  template <typename Run>
  explicit PoolWorker(Run run) : thread_(std::make_unique<std::thread>(std::move(run))) {}
  PoolWorker(const PoolWorker&) = delete;
  PoolWorker& operator=(const PoolWorker&) = delete;
  ~PoolWorker() { Stop(); }

  Shared& shared() const { return *shared_; }

  /// \brief In the process that started the thread: tells it to stop, joins
  /// it and destroys the shared state. In a forked child: drops both
  /// unfinished (see above). Either way the shared state is gone after.
  void Stop() {
    if (shared_ == nullptr) return;
    if (::getpid() != owner_) {
      (void)thread_.release();
      (void)shared_.release();
      return;
    }
    {
      std::lock_guard lock(shared_->mutex);
      shared_->stopping = true;
    }
    shared_->changed.notify_all();
    thread_->join();
    thread_.reset();
    shared_.reset();
  }

 private:
  const pid_t owner_ = ::getpid();
  std::unique_ptr<Shared> shared_ = std::make_unique<Shared>();
  std::unique_ptr<std::thread> thread_;
};

}  // namespace tesscpp::runtime
