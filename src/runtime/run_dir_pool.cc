// run_dir_pool.cc: RunDirectoryPool.
#include "runtime/run_dir_pool.h"

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
constexpr int kNice = 19;

}  // namespace

Result<std::unique_ptr<RunDirectoryPool>> RunDirectoryPool::Create(const std::string& output_path,
                                                                   bool tracked_in_files) {
  TESS_ASSIGN_OR_RETURN(platform::PoolDirectory dir,
                        platform::PoolDirectory::Create(output_path, kPoolPrefix, "run directory pool"));
  return std::unique_ptr<RunDirectoryPool>(
      new RunDirectoryPool(output_path, std::move(dir), tracked_in_files));
}

RunDirectoryPool::RunDirectoryPool(std::string output_path, platform::PoolDirectory dir,
                                   bool tracked_in_files)
    : output_path_(std::move(output_path)), dir_(std::move(dir)), tracked_in_files_(tracked_in_files) {}

RunDirectoryPool::~RunDirectoryPool() {
  if (!dir_.Owned()) {
    // A forked child's copy: the thread and the files are the parent's; the
    // spares' logs, open here too, are closed.
    for (Spare& spare : worker_.shared().ready) spare.log = platform::Fd();
  }
  worker_.Stop();  // the spares' logs close with the shared state...
  dir_.Remove();   // ...before their directories go
}

std::optional<RunDirectoryPool::PreparedRun> RunDirectoryPool::Take() {
  if (!dir_.Owned()) return std::nullopt;  // a forked child: not its pool
  Shared& s = worker_.shared();
  std::optional<Spare> spare;
  {
    std::lock_guard lock(s.mutex);
    s.failed = false;
    if (!s.ready.empty()) {
      spare = std::move(s.ready.back());
      s.ready.pop_back();
    }
  }
  s.changed.notify_all();
  if (!spare) return std::nullopt;
  PreparedRun run{spare->id, output_path_ + "/run_" + spare->id, std::move(spare->log)};
  // The open log follows its directory through the rename.
  const std::string spare_dir = dir_.path() + "/" + spare->id;
  if (std::rename(spare_dir.c_str(), run.dir.c_str()) != 0) {
    std::error_code ec;
    fs::remove_all(spare_dir, ec);
    return std::nullopt;
  }
  return run;
}

size_t RunDirectoryPool::spares() const {
  std::lock_guard lock(worker_.shared().mutex);
  return worker_.shared().ready.size();
}

void RunDirectoryPool::WaitIdle() const {
  Shared& s = worker_.shared();
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock, [&s] { return s.stopping || s.failed || s.ready.size() >= kSpares; });
}

void RunDirectoryPool::Fill() {
  // The spares are for later: on a busy machine the calls come first (on
  // Linux a thread's nice value is its own).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kNice);
  // Here rather than in Create: an output path that keeps many runs takes a
  // while to list, and the first call should not wait for it.
  dir_.RemoveOrphans();
  Shared& s = worker_.shared();
  std::unique_lock lock(s.mutex);
  while (!s.stopping) {
    if (s.failed || s.ready.size() >= kSpares) {
      s.changed.wait(lock);
      continue;
    }
    lock.unlock();
    std::string id = platform::NewUuid4();
    auto log = CreateRunDirectory(dir_.path() + "/" + id, tracked_in_files_);
    if (!log.ok()) {
      std::error_code ec;
      fs::remove_all(dir_.path() + "/" + id, ec);
    }
    lock.lock();
    if (log.ok()) {
      s.ready.push_back({std::move(id), *std::move(log)});
    } else {
      s.failed = true;  // out of space, or the output path went away
    }
    s.changed.notify_all();
  }
}

}  // namespace tesscpp::runtime
