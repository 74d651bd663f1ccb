// run_dir_pool.cc: RunDirectoryPool.
#include "runtime/run_dir_pool.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
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

// Pools left by processes that no longer run (a worker killed by a signal
// never reaches its destructor). A pid reused since by another process keeps
// its directory: removing a live process's spares would break its calls.
void RemoveOrphanedPools(const std::string& output_path) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(output_path, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPoolPrefix, 0) != 0) continue;
    const std::string digits = name.substr(kPoolPrefix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(digits.c_str(), nullptr, 10);
    if (::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

Result<std::unique_ptr<RunDirectoryPool>> RunDirectoryPool::Create(const std::string& output_path,
                                                                   bool tracked_in_files) {
  RemoveOrphanedPools(output_path);
  std::string dir = output_path + "/" + std::string(kPoolPrefix) + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return Status::IoError("cannot create the run directory pool '", dir, "': ", ec.message());
  return std::unique_ptr<RunDirectoryPool>(
      new RunDirectoryPool(output_path, std::move(dir), tracked_in_files));
}

RunDirectoryPool::RunDirectoryPool(std::string output_path, std::string dir, bool tracked_in_files)
    : output_path_(std::move(output_path)),
      dir_(std::move(dir)),
      tracked_in_files_(tracked_in_files),
      thread_([this] { Fill(); }) {}

RunDirectoryPool::~RunDirectoryPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  ready_.clear();  // their logs closed before their directories go
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::optional<RunDirectoryPool::PreparedRun> RunDirectoryPool::Take() {
  std::optional<Spare> spare;
  {
    std::lock_guard lock(mutex_);
    failed_ = false;
    if (!ready_.empty()) {
      spare = std::move(ready_.back());
      ready_.pop_back();
    }
  }
  changed_.notify_all();
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
  std::lock_guard lock(mutex_);
  return ready_.size();
}

void RunDirectoryPool::WaitIdle() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return stopping_ || failed_ || ready_.size() >= kSpares; });
}

void RunDirectoryPool::Fill() {
  // The spares are for later: on a busy machine the calls come first (on
  // Linux a thread's nice value is its own).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kNice);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (failed_ || ready_.size() >= kSpares) {
      changed_.wait(lock);
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
      ready_.push_back({std::move(id), *std::move(log)});
    } else {
      failed_ = true;  // out of space, or the output path went away
    }
    changed_.notify_all();
  }
}

}  // namespace tesscpp::runtime
