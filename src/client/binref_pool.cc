// binref_pool.cc: shared, pre-faulted mappings of reused input files.
#include "client/binref_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "platform/uuid.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::client {

struct BinrefPool::Slot {
  std::string name;  // relative to the pool's directory
  std::string path;
  platform::Fd fd;
  void* map = nullptr;
  size_t capacity = 0;

  Slot() = default;
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() {
    if (map != nullptr) ::munmap(map, capacity);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

BinrefPool::BinrefPool(std::string dir) : dir_(std::move(dir)) {}
BinrefPool::~BinrefPool() = default;
BinrefPool::Lease::Lease(BinrefPool* pool) : pool_(pool) {}

Result<std::unique_ptr<BinrefPool::Slot>> BinrefPool::Take(size_t size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest free slot that fits.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->capacity >= size && (best == free_.end() || (*it)->capacity < (*best)->capacity)) best = it;
    }
    if (best != free_.end()) {
      auto slot = std::move(*best);
      free_.erase(best);
      return slot;
    }
  }
  // Sizes grow in powers of two from 1 MiB, so a pool settles on few files.
  size_t capacity = size_t{1} << 20;
  while (capacity < size) capacity *= 2;
  auto slot = std::make_unique<Slot>();
  slot->name = "tesscpp-pool-" + platform::NewUuid4() + ".bin";
  slot->path = (std::filesystem::path(dir_) / slot->name).string();
  TESS_ASSIGN_OR_RETURN(slot->fd, platform::Fd::Open(slot->path, O_RDWR | O_CREAT | O_TRUNC, 0644));
  if (::ftruncate(slot->fd.get(), static_cast<off_t>(capacity)) != 0) {
    return Status::IoError("cannot size binref pool file '", slot->path, "': ", std::strerror(errno));
  }
  void* map = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, slot->fd.get(), 0);
  if (map == MAP_FAILED)
    return Status::IoError("cannot map binref pool file '", slot->path, "': ", std::strerror(errno));
  slot->map = map;
  slot->capacity = capacity;
  return slot;
}

void BinrefPool::Give(std::unique_ptr<Slot> slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(slot));
}

BinrefPool::Lease::~Lease() {
  for (auto& slot : slots_) pool_->Give(std::move(slot));
}

Result<std::string> BinrefPool::Lease::Append(std::span<const uint8_t> bytes) {
  TESS_ASSIGN_OR_RETURN(std::unique_ptr<Slot> slot, pool_->Take(bytes.size()));
  if (!bytes.empty()) std::memcpy(slot->map, bytes.data(), bytes.size());
  std::string spec = slot->name + ":0";
  slots_.push_back(std::move(slot));
  return spec;
}

}  // namespace tesscpp::client
