// binref_output_pool.cc: BinrefOutputPool.
#include "runtime/binref_output_pool.h"

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "tesscpp/internal/platform/file.h"

namespace tesscpp::runtime {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPoolPrefix = ".tesscpp-binref-pool-";

}  // namespace

Result<std::unique_ptr<BinrefOutputPool>> BinrefOutputPool::Create(const std::string& output_path,
                                                                   int64_t max_bytes) {
  TESS_ASSIGN_OR_RETURN(platform::PoolDirectory dir,
                        platform::PoolDirectory::Create(output_path, kPoolPrefix, "binref pool"));
  return std::unique_ptr<BinrefOutputPool>(new BinrefOutputPool(std::move(dir), max_bytes));
}

BinrefOutputPool::BinrefOutputPool(platform::PoolDirectory dir, int64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

BinrefOutputPool::~BinrefOutputPool() {
  worker_.Stop();
  dir_.Remove();  // spares nobody took (a no-op in a forked child: they are the parent's)
}

std::optional<std::string> BinrefOutputPool::Take(int64_t size) {
  if (!dir_.Owned()) return std::nullopt;  // a forked child: not its spares
  std::optional<std::string> taken;
  Shared& s = worker_.shared();
  {
    std::lock_guard lock(s.mutex);
    s.recent.erase(std::remove(s.recent.begin(), s.recent.end(), size), s.recent.end());
    s.recent.push_front(size);
    if (s.recent.size() > kSizes) s.recent.pop_back();
    // The smallest spare that fits; more than twice the size would allocate
    // pages only to cut them off again.
    auto best = s.ready.end();
    for (auto it = s.ready.begin(); it != s.ready.end(); ++it) {
      if (it->size >= size && it->size <= 2 * size && (best == s.ready.end() || it->size < best->size))
        best = it;
    }
    if (best != s.ready.end()) {
      taken = std::move(best->path);
      s.ready_bytes -= best->size;
      s.ready.erase(best);
    }
  }
  s.changed.notify_all();
  return taken;
}

BinrefOutputPool::Spares BinrefOutputPool::spares() const {
  std::lock_guard lock(worker_.shared().mutex);
  return {worker_.shared().ready.size(), worker_.shared().ready_bytes};
}

void BinrefOutputPool::WaitIdle() const {
  Shared& s = worker_.shared();
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock,
                 [&] { return s.stopping || (!s.busy && s.NextSize(max_bytes_) == 0 && !s.HasStale()); });
}

int64_t BinrefOutputPool::Shared::NextSize(int64_t max_bytes) const {
  for (const int64_t size : recent) {
    const auto have =
        std::count_if(ready.begin(), ready.end(), [size](const Spare& s) { return s.size == size; });
    if (have < kSparesPerSize && ready_bytes + size <= max_bytes) return size;
  }
  return 0;
}

bool BinrefOutputPool::Shared::HasStale() const {
  return std::any_of(ready.begin(), ready.end(), [this](const Spare& s) {
    return std::find(recent.begin(), recent.end(), s.size) == recent.end();
  });
}

void BinrefOutputPool::Run() {
  // Here rather than in Create: an output path that keeps many runs takes a
  // while to list, and the first answer should not wait for it.
  dir_.RemoveOrphans();
  Shared& s = worker_.shared();
  std::unique_lock lock(s.mutex);
  while (!s.stopping) {
    // Spares of sizes nobody asked for lately make room for the ones in demand.
    std::vector<std::string> stale;
    std::erase_if(s.ready, [&](Spare& spare) {
      if (std::find(s.recent.begin(), s.recent.end(), spare.size) != s.recent.end()) return false;
      s.ready_bytes -= spare.size;
      stale.push_back(std::move(spare.path));
      return true;
    });
    const int64_t size = s.NextSize(max_bytes_);
    if (stale.empty() && size == 0) {
      s.changed.notify_all();  // idle
      s.changed.wait(lock);
      continue;
    }
    s.busy = true;
    const std::string path = dir_.path() + "/spare-" + std::to_string(s.next_id++) + ".bin";
    lock.unlock();
    std::error_code ec;
    for (const std::string& file : stale) fs::remove(file, ec);
    bool made = false;
    if (size > 0) {
      auto file = platform::Fd::Open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC);
      made = file.ok() && file->Reserve(0, size).ok();
      if (!made) fs::remove(path, ec);
    }
    lock.lock();
    s.busy = false;
    if (s.stopping) {
      if (made) fs::remove(path, ec);
      return;
    }
    if (made) {
      s.ready.push_back({path, size});
      s.ready_bytes += size;
    } else if (size > 0) {
      // Out of space (or the directory went away): stop preparing this size
      // until an answer asks for it again, rather than retrying in a loop.
      s.recent.erase(std::remove(s.recent.begin(), s.recent.end(), size), s.recent.end());
    }
  }
}

}  // namespace tesscpp::runtime
