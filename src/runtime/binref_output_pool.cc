// binref_output_pool.cc: BinrefOutputPool.
#include "runtime/binref_output_pool.h"

#include <fcntl.h>

#include <algorithm>
#include <filesystem>

#include "tesscpp/internal/file.h"

namespace tesscpp::runtime {

namespace fs = std::filesystem;

Result<std::unique_ptr<BinrefOutputPool>> BinrefOutputPool::Create(std::string dir, int64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create the binref pool directory '", dir, "': ", ec.message());
  return std::unique_ptr<BinrefOutputPool>(new BinrefOutputPool(std::move(dir), max_bytes));
}

BinrefOutputPool::BinrefOutputPool(std::string dir, int64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes), thread_([this] { Run(); }) {}

BinrefOutputPool::~BinrefOutputPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  std::error_code ec;
  fs::remove_all(dir_, ec);  // spares nobody took; nothing else lives there
}

std::optional<std::string> BinrefOutputPool::Take(int64_t size) {
  std::optional<std::string> taken;
  {
    std::lock_guard lock(mutex_);
    recent_.erase(std::remove(recent_.begin(), recent_.end(), size), recent_.end());
    recent_.push_front(size);
    if (recent_.size() > kSizes) recent_.pop_back();
    // The smallest spare that fits; more than twice the size would allocate
    // pages only to cut them off again.
    auto best = ready_.end();
    for (auto it = ready_.begin(); it != ready_.end(); ++it) {
      if (it->size >= size && it->size <= 2 * size && (best == ready_.end() || it->size < best->size))
        best = it;
    }
    if (best != ready_.end()) {
      taken = std::move(best->path);
      ready_bytes_ -= best->size;
      ready_.erase(best);
    }
  }
  changed_.notify_all();
  return taken;
}

BinrefOutputPool::Spares BinrefOutputPool::spares() const {
  std::lock_guard lock(mutex_);
  return {ready_.size(), ready_bytes_};
}

void BinrefOutputPool::WaitIdle() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return stopping_ || (!busy_ && NextSize() == 0 && !HasStale()); });
}

int64_t BinrefOutputPool::NextSize() const {
  for (const int64_t size : recent_) {
    const auto have =
        std::count_if(ready_.begin(), ready_.end(), [size](const Spare& s) { return s.size == size; });
    if (have < kSparesPerSize && ready_bytes_ + size <= max_bytes_) return size;
  }
  return 0;
}

bool BinrefOutputPool::HasStale() const {
  return std::any_of(ready_.begin(), ready_.end(), [this](const Spare& s) {
    return std::find(recent_.begin(), recent_.end(), s.size) == recent_.end();
  });
}

void BinrefOutputPool::Run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // Spares of sizes nobody asked for lately make room for the ones in demand.
    std::vector<std::string> stale;
    std::erase_if(ready_, [&](Spare& s) {
      if (std::find(recent_.begin(), recent_.end(), s.size) != recent_.end()) return false;
      ready_bytes_ -= s.size;
      stale.push_back(std::move(s.path));
      return true;
    });
    const int64_t size = NextSize();
    if (stale.empty() && size == 0) {
      changed_.notify_all();  // idle
      changed_.wait(lock);
      continue;
    }
    busy_ = true;
    const std::string path = dir_ + "/spare-" + std::to_string(next_id_++) + ".bin";
    lock.unlock();
    std::error_code ec;
    for (const std::string& file : stale) fs::remove(file, ec);
    bool made = false;
    if (size > 0) {
      auto file = platform::Fd::Open(path, O_RDWR | O_CREAT | O_EXCL);
      made = file.ok() && file->Reserve(0, size).ok();
      if (!made) fs::remove(path, ec);
    }
    lock.lock();
    busy_ = false;
    if (stopping_) {
      if (made) fs::remove(path, ec);
      return;
    }
    if (made) {
      ready_.push_back({path, size});
      ready_bytes_ += size;
    } else if (size > 0) {
      // Out of space (or the directory went away): stop preparing this size
      // until an answer asks for it again, rather than retrying in a loop.
      recent_.erase(std::remove(recent_.begin(), recent_.end(), size), recent_.end());
    }
  }
}

}  // namespace tesscpp::runtime
