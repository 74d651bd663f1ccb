// run_dir_pool.cc: RunDirectoryPool.
#include "runtime/run_dir_pool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string_view>

#include "platform/uuid.h"
#include "runtime/run_dir.h"

namespace tesscpp::runtime {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPoolPrefix = ".tesscpp-run-pool-";
constexpr std::string_view kStagingPrefix = ".tesscpp-run-pool-staging-";
constexpr std::string_view kLockName = "/lock";
constexpr int kNice = 19;

// Pools whose owner is gone: a process that was killed, or a server worker
// that ended with _Exit, never reaches its destructor. The owner holds an
// exclusive flock on its pool's lock file for as long as it lives, so a lock
// taken here means nobody owns that pool; unlike a pid, that holds across
// pid namespaces (containers sharing an output volume) and pid reuse.
void RemoveOrphanedPools(const std::string& output_path, const std::string& own) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_path, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPoolPrefix, 0) != 0 || name.rfind(kStagingPrefix, 0) == 0 || entry.path() == own)
      continue;
    auto lock = platform::Fd::Open(entry.path().string() + std::string(kLockName), O_RDWR | O_CLOEXEC);
    if (!lock.ok() || ::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) continue;
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

}  // namespace

Result<std::unique_ptr<RunDirectoryPool>> RunDirectoryPool::Create(const std::string& output_path,
                                                                   bool tracked_in_files) {
  // Made under a staging name and locked before it is renamed to a pool's
  // name, so that no other process's clean-up ever sees it unlocked.
  const std::string id = platform::NewUuid4().substr(0, 8);
  const std::string staging = output_path + "/" + std::string(kStagingPrefix) + id;
  std::string dir = output_path + "/" + std::string(kPoolPrefix) + std::to_string(::getpid()) + "-" + id;
  std::error_code ec;
  fs::create_directory(staging, ec);
  if (ec) return Status::IoError("cannot create the run directory pool '", staging, "': ", ec.message());
  auto lock = platform::Fd::Open(staging + std::string(kLockName), O_RDWR | O_CREAT | O_CLOEXEC);
  if (lock.ok() && ::flock(lock->get(), LOCK_EX) == 0 && std::rename(staging.c_str(), dir.c_str()) == 0) {
    return std::unique_ptr<RunDirectoryPool>(
        new RunDirectoryPool(output_path, std::move(dir), tracked_in_files, *std::move(lock)));
  }
  fs::remove_all(staging, ec);
  return Status::IoError("cannot set up the run directory pool '", dir, "'");
}

RunDirectoryPool::RunDirectoryPool(std::string output_path, std::string dir, bool tracked_in_files,
                                   platform::Fd lock)
    : output_path_(std::move(output_path)),
      dir_(std::move(dir)),
      tracked_in_files_(tracked_in_files),
      lock_(std::move(lock)),
      owner_(::getpid()),
      thread_(std::make_unique<std::thread>([this] { Fill(); })) {}

RunDirectoryPool::~RunDirectoryPool() {
  if (::getpid() != owner_) {
    // A forked child's copy: the thread and the files are the parent's. The
    // spares' logs are closed here; the thread object (no such thread here)
    // and the shared state (see Shared) are dropped unfinished.
    for (Spare& spare : shared_->ready) spare.log = platform::Fd();
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
  shared_->ready.clear();  // their logs closed before their directories go
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::optional<RunDirectoryPool::PreparedRun> RunDirectoryPool::Take() {
  if (::getpid() != owner_) return std::nullopt;  // a forked child: not its pool
  std::optional<Spare> spare;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->failed = false;
    if (!shared_->ready.empty()) {
      spare = std::move(shared_->ready.back());
      shared_->ready.pop_back();
    }
  }
  shared_->changed.notify_all();
  if (!spare) return std::nullopt;
  PreparedRun run{spare->id, output_path_ + "/run_" + spare->id, std::move(spare->log)};
  // The open log follows its directory through the rename.
  if (std::rename((dir_ + "/" + spare->id).c_str(), run.dir.c_str()) != 0) {
    std::error_code ec;
    fs::remove_all(dir_ + "/" + spare->id, ec);
    return std::nullopt;
  }
  return run;
}

size_t RunDirectoryPool::spares() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->ready.size();
}

void RunDirectoryPool::WaitIdle() const {
  std::unique_lock lock(shared_->mutex);
  shared_->changed.wait(
      lock, [this] { return shared_->stopping || shared_->failed || shared_->ready.size() >= kSpares; });
}

void RunDirectoryPool::Fill() {
  // The spares are for later: on a busy machine the calls come first (on
  // Linux a thread's nice value is its own).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kNice);
  // Here rather than in Create: an output path that keeps many runs takes a
  // while to list, and the first call should not wait for it.
  RemoveOrphanedPools(output_path_, dir_);
  std::unique_lock lock(shared_->mutex);
  while (!shared_->stopping) {
    if (shared_->failed || shared_->ready.size() >= kSpares) {
      shared_->changed.wait(lock);
      continue;
    }
    lock.unlock();
    std::string id = platform::NewUuid4();
    auto log = CreateRunDirectory(dir_ + "/" + id, tracked_in_files_);
    if (!log.ok()) {
      std::error_code ec;
      fs::remove_all(dir_ + "/" + id, ec);
    }
    lock.lock();
    if (log.ok()) {
      shared_->ready.push_back({std::move(id), *std::move(log)});
    } else {
      shared_->failed = true;  // out of space, or the output path went away
    }
    shared_->changed.notify_all();
  }
}

}  // namespace tesscpp::runtime
