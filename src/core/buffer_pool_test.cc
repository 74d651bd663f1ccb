#include "tesscpp/internal/core/buffer_pool.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <thread>
#include <vector>

namespace tesscpp {
namespace {

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(BufferPool, AlignedWithZeroedReadableTail) {
  BufferPool pool;
  for (int64_t size : {0, 1, 63, 64, 4095, 1 << 20, (1 << 20) + 17, 5 << 20}) {
    auto b = pool.Allocate(size);
    ASSERT_OK(b);
    EXPECT_EQ(b->size(), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Buffer::kAlignment, 0u) << size;
    EXPECT_TRUE(b->padded()) << size;
    for (int64_t i = 0; i < Buffer::kPadding; ++i) EXPECT_EQ(b->data()[size + i], 0) << size;
  }
}

TEST(BufferPool, SlicesKeepTheTailAndTheMemory) {
  BufferPool pool;
  Buffer slice;
  int64_t whole_tail = 0;
  {
    Buffer whole = *pool.Allocate(100);
    std::memset(whole.data(), 7, 100);
    whole_tail = whole.readable_tail();
    slice = whole.Slice(10, 20);
  }
  EXPECT_EQ(slice.size(), 20);
  EXPECT_GE(whole_tail, Buffer::kPadding);
  EXPECT_EQ(slice.readable_tail(), 70 + whole_tail);
  EXPECT_EQ(slice.data()[19], 7);  // still alive after `whole` went away
}

TEST(BufferPoolDeathTest, SliceOutsideAborts) {
  BufferPool pool;
  Buffer b = *pool.Allocate(10);
  EXPECT_DEATH((void)b.Slice(5, 6), "outside");
}

TEST(BufferPool, ReusesFreedBlocks) {
  BufferPool pool;
  for (int i = 0; i < 5; ++i) {
    Buffer b = *pool.Allocate(3 << 20);
    b.data()[0] = 1;
  }
  BufferPoolStats s = pool.stats();
  EXPECT_EQ(s.fresh_blocks, 1);
  EXPECT_EQ(s.reused_blocks, 4);
  EXPECT_EQ(s.blocks_in_use, 0);
  EXPECT_GT(s.cached_bytes, 3 << 20);
  pool.Trim();
  EXPECT_EQ(pool.stats().cached_bytes, 0);
}

TEST(BufferPool, NearbySizesShareAClass) {
  BufferPool pool;
  { Buffer b = *pool.Allocate(10'000'000); }
  { Buffer b = *pool.Allocate(10'000'123); }
  EXPECT_EQ(pool.stats().fresh_blocks, 1);
}

// The point of the pool: a steady loop of large allocations that are written in
// full touches no fresh pages.
TEST(BufferPool, SteadyStateTouchesNoFreshPages) {
  BufferPool pool;
  constexpr int64_t kSize = 64 << 20;
  for (int warmup = 0; warmup < 2; ++warmup) {
    Buffer b = *pool.Allocate(kSize);
    std::memset(b.data(), warmup, kSize);
  }
  const long before = MinorFaults();
  for (int i = 0; i < 10; ++i) {
    Buffer b = *pool.Allocate(kSize);
    std::memset(b.data(), i, kSize);
  }
  const long faults = MinorFaults() - before;
  // 10 x 64 MiB of fresh memory would be >= 10 x 16384 faults (4 KiB pages).
  EXPECT_LT(faults, 200) << "fresh pages touched in steady state";
  EXPECT_EQ(pool.stats().fresh_blocks, 1);
}

TEST(BufferPool, RespectsTheCacheCap) {
  BufferPoolOptions options;
  options.max_cached_bytes = 4 << 20;
  BufferPool pool(options);
  { Buffer b = *pool.Allocate(8 << 20); }  // larger than the cap: unmapped on release
  EXPECT_EQ(pool.stats().cached_bytes, 0);
  { Buffer b = *pool.Allocate(8 << 20); }
  EXPECT_EQ(pool.stats().fresh_blocks, 2);
}

TEST(BufferPool, EvictsTheLeastRecentlyUsedToStayUnderTheCap) {
  BufferPoolOptions options;
  options.max_cached_bytes = 8 << 20;
  BufferPool pool(options);
  {
    Buffer a = *pool.Allocate(2 << 20);
    Buffer b = *pool.Allocate(3 << 20);
  }                                        // both kept: 2.x + 3.x MiB classes
  { Buffer c = *pool.Allocate(5 << 20); }  // kept by evicting the older blocks
  const int64_t fresh = pool.stats().fresh_blocks;
  EXPECT_LE(pool.stats().cached_bytes, 8 << 20);
  { Buffer c = *pool.Allocate(5 << 20); }  // the recent block is still there
  EXPECT_EQ(pool.stats().fresh_blocks, fresh);
}

TEST(BufferPool, BuffersOutliveThePool) {
  Buffer survivor;
  {
    BufferPool pool;
    survivor = *pool.Allocate(2 << 20);
  }
  std::memset(survivor.data(), 1, 2 << 20);  // ASan would flag a dangling block
  EXPECT_EQ(survivor.data()[(2 << 20) - 1], 1);
}

TEST(BufferPool, RejectsNegativeSizes) {
  BufferPool pool;
  EXPECT_STATUS(pool.Allocate(-1), StatusCode::kOutOfRange);
}

TEST(BufferPool, ConcurrentUse) {
  BufferPool pool;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 50; ++i) {
        Buffer b = *pool.Allocate((1 + (i + t) % 3) << 20);
        b.data()[0] = static_cast<uint8_t>(i);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(pool.stats().blocks_in_use, 0);
}

}  // namespace
}  // namespace tesscpp
