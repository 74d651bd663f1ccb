// buffer_pool.cc: size-classed block cache over mmap.
#include "tesscpp/internal/core/buffer_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace tesscpp {

// Kept blocks by capacity. A block's capacity is its size class: four classes per
// power of two (2^k, 1.25, 1.5, 1.75 x 2^k), so a buffer wastes at most 25 % of
// address space, and only address space: pages are touched as they are written.
struct BufferPool::State {
  struct Kept {
    void* block;
    uint64_t released_at;  // release counter, for evicting the least recently used
  };

  BufferPoolOptions options;
  mutable std::mutex mu;
  std::multimap<int64_t, Kept> cached;  // capacity -> block
  uint64_t releases = 0;
  BufferPoolStats stats;

  ~State() {
    for (auto& [capacity, kept] : cached) munmap(kept.block, static_cast<size_t>(capacity));
  }

  // Keeps a released block, evicting the least recently released ones when the
  // cap would be exceeded: the block just used is the likeliest to be wanted again.
  void Keep(void* block, int64_t capacity) {
    if (capacity > options.max_cached_bytes) {
      munmap(block, static_cast<size_t>(capacity));
      return;
    }
    while (stats.cached_bytes + capacity > options.max_cached_bytes) {
      auto oldest = cached.begin();
      for (auto it = cached.begin(); it != cached.end(); ++it) {
        if (it->second.released_at < oldest->second.released_at) oldest = it;
      }
      munmap(oldest->second.block, static_cast<size_t>(oldest->first));
      stats.cached_bytes -= oldest->first;
      cached.erase(oldest);
    }
    cached.emplace(capacity, Kept{block, ++releases});
    stats.cached_bytes += capacity;
  }
};

namespace {

int64_t SizeClass(int64_t bytes) {
  int64_t pow2 = int64_t{1} << 20;
  while (pow2 * 2 <= bytes) pow2 *= 2;
  for (int64_t step = 0; step <= 4; ++step) {
    const int64_t capacity = pow2 + step * (pow2 / 4);
    if (capacity >= bytes) return capacity;
  }
  return pow2 * 2;  // unreachable: step 4 is 2 * pow2 > bytes
}

// Returns a pooled block to its pool when the last Buffer sharing it goes away.
struct BlockReturner {
  std::shared_ptr<BufferPool::State> state;
  int64_t capacity;

  void operator()(void* block) const noexcept {
    std::lock_guard<std::mutex> lock(state->mu);
    state->stats.blocks_in_use--;
    state->Keep(block, capacity);
  }
};

struct AlignedDeleter {
  void operator()(void* p) const noexcept {
    ::operator delete(p, static_cast<std::align_val_t>(Buffer::kAlignment));
  }
};

}  // namespace

BufferPool::BufferPool(BufferPoolOptions options) : state_(std::make_shared<State>()) {
  state_->options = options;
}

BufferPool::~BufferPool() = default;

Result<Buffer> BufferPool::Allocate(int64_t size, Commit commit) {
  if (size < 0) return Status::OutOfRange("buffer size ", size, " is negative");
  if (size > (int64_t{1} << 62)) return Status::OutOfRange("buffer size ", size, " is too large");
  const int64_t needed = size + Buffer::kPadding;

  if (needed < state_->options.pooled_threshold) {
    const int64_t capacity = (needed + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment;
    void* p = ::operator new(static_cast<size_t>(capacity), static_cast<std::align_val_t>(Buffer::kAlignment),
                             std::nothrow);
    if (p == nullptr) return Status::ResourceExhausted("cannot allocate ", capacity, " bytes");
    std::memset(static_cast<uint8_t*>(p) + size, 0, static_cast<size_t>(Buffer::kPadding));
    return Buffer::Wrap(p, size, std::shared_ptr<void>(p, AlignedDeleter{}), capacity - size);
  }

  const int64_t size_class = SizeClass(needed);
  void* block = nullptr;
  int64_t capacity = size_class;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    // Reuse the smallest kept block that fits, unless it would waste more than half.
    auto it = state_->cached.lower_bound(size_class);
    if (it != state_->cached.end() && it->first <= 2 * size_class) {
      capacity = it->first;
      block = it->second.block;
      state_->cached.erase(it);
      state_->stats.cached_bytes -= capacity;
      state_->stats.reused_blocks++;
    }
  }
  if (block == nullptr) {
    block = mmap(nullptr, static_cast<size_t>(capacity), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    if (block == MAP_FAILED) {
      return Status::ResourceExhausted("mmap of ", capacity, " bytes failed: ", std::strerror(errno));
    }
    if (state_->options.huge_pages && commit == Commit::kEager)
      madvise(block, static_cast<size_t>(capacity), MADV_HUGEPAGE);
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stats.fresh_blocks++;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stats.blocks_in_use++;
  }
  std::memset(static_cast<uint8_t*>(block) + size, 0, static_cast<size_t>(Buffer::kPadding));
  std::shared_ptr<void> owner(block, BlockReturner{state_, capacity});
  return Buffer::Wrap(block, size, std::move(owner), capacity - size);
}

void BufferPool::AdviseHugePages(const Buffer& buffer, int64_t offset) const {
  if (!state_->options.huge_pages || buffer.size() + Buffer::kPadding < state_->options.pooled_threshold)
    return;
  // madvise wants a page-aligned start; pooled blocks start on a page.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin =
      (reinterpret_cast<uintptr_t>(buffer.data()) + static_cast<uintptr_t>(offset) + page - 1) & ~(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(buffer.data()) + static_cast<uintptr_t>(buffer.size());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the address was rounded as an integer
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

void BufferPool::Trim() {
  std::multimap<int64_t, State::Kept> released;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    released.swap(state_->cached);
    state_->stats.cached_bytes = 0;
  }
  for (auto& [capacity, kept] : released) munmap(kept.block, static_cast<size_t>(capacity));
}

BufferPool* BufferPool::Default() {
  static BufferPool pool;
  return &pool;
}

}  // namespace tesscpp
