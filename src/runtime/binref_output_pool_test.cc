// binref_output_pool_test.cc: spares are prepared, handed out once, kept
// within the budget and removed with the pool; pools nobody holds are
// removed; a forked child takes none of its parent's.
#include "runtime/binref_output_pool.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "support/in_child.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::runtime {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMiB = int64_t{1} << 20;

class BinrefOutputPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // tmpfs where there is one: that is where the pool is meant to be used.
    auto made = platform::MakeScratchDir("tesscpp-pool-test-");
    ASSERT_TRUE(made.ok()) << made.status().message();
    scratch_ = *made;
  }
  void TearDown() override { fs::remove_all(scratch_); }
  std::string out() const { return scratch_.string(); }

  fs::path scratch_;
};

// Bytes the filesystem has allocated to `path` (a sparse file has none).
int64_t AllocatedBytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int64_t>(st.st_blocks) * 512;
}

TEST_F(BinrefOutputPoolTest, PreparesSparesOfTheSizesAskedFor) {
  auto pool = *BinrefOutputPool::Create(out(), 64 * kMiB);
  // Nothing is ready before the first answer says what size it needs.
  EXPECT_EQ(pool->Take(2 * kMiB), std::nullopt);
  pool->WaitIdle();
  EXPECT_EQ(pool->spares().files, size_t{BinrefOutputPool::kSparesPerSize});
  EXPECT_EQ(pool->spares().bytes, BinrefOutputPool::kSparesPerSize * 2 * kMiB);

  const std::optional<std::string> taken = pool->Take(2 * kMiB);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(fs::file_size(*taken), uint64_t{2 * kMiB});
  EXPECT_GE(AllocatedBytes(*taken), 2 * kMiB);  // allocated, not sparse
  // Handed out once; the pool makes another in its place.
  pool->WaitIdle();
  EXPECT_EQ(pool->spares().files, size_t{BinrefOutputPool::kSparesPerSize});
  EXPECT_NE(pool->Take(2 * kMiB), taken);
}

TEST_F(BinrefOutputPoolTest, HandsOutOnlySparesThatFit) {
  auto pool = *BinrefOutputPool::Create(out(), 64 * kMiB);
  EXPECT_EQ(pool->Take(4 * kMiB), std::nullopt);
  pool->WaitIdle();
  // Too small for 5 MiB, and more than twice 1 MiB.
  EXPECT_EQ(pool->Take(5 * kMiB), std::nullopt);
  EXPECT_EQ(pool->Take(1 * kMiB), std::nullopt);
  // 3 MiB fits a 4 MiB spare (the writer cuts the rest).
  const std::optional<std::string> taken = pool->Take(3 * kMiB);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(fs::file_size(*taken), uint64_t{4 * kMiB});
}

TEST_F(BinrefOutputPoolTest, KeepsSparesWithinTheBudget) {
  auto pool = *BinrefOutputPool::Create(out(), 5 * kMiB);
  // A taken file is the taker's; these takers drop theirs.
  auto take = [&pool](int64_t size) {
    if (auto path = pool->Take(size)) fs::remove(*path);
  };
  for (const int64_t size : {2 * kMiB, 3 * kMiB, 1 * kMiB, 2 * kMiB}) {
    take(size);
    pool->WaitIdle();
    EXPECT_LE(pool->spares().bytes, 5 * kMiB);
    int64_t on_disk = 0;
    for (const auto& entry : fs::directory_iterator(pool->dir()))
      on_disk += static_cast<int64_t>(entry.file_size());
    EXPECT_EQ(on_disk, pool->spares().bytes);
  }
  // Sizes nobody asked for lately make way: only the 4 most recent are kept.
  for (const int64_t size : {kMiB / 8, kMiB / 4, kMiB / 2, kMiB / 16}) take(size);
  pool->WaitIdle();
  for (const auto& entry : fs::directory_iterator(pool->dir())) EXPECT_LT(entry.file_size(), uint64_t{kMiB});
}

TEST_F(BinrefOutputPoolTest, RemovesItsFilesButNotTakenOnes) {
  std::string kept;
  std::string where;
  {
    auto pool = *BinrefOutputPool::Create(out(), 16 * kMiB);
    where = pool->dir();
    (void)pool->Take(kMiB);
    pool->WaitIdle();
    const std::optional<std::string> taken = pool->Take(kMiB);
    ASSERT_TRUE(taken.has_value());
    kept = (scratch_ / "answer.bin").string();
    fs::rename(*taken, kept);  // what BinrefWriter does with it
  }
  EXPECT_FALSE(fs::exists(where));
  EXPECT_TRUE(fs::exists(kept));
}

TEST_F(BinrefOutputPoolTest, HandsEachSpareToOneTaker) {
  auto pool = *BinrefOutputPool::Create(out(), 32 * kMiB);
  // Spares ready before the race (more may be made while it runs).
  (void)pool->Take(kMiB / 4);
  pool->WaitIdle();
  ASSERT_EQ(pool->spares().files, size_t{BinrefOutputPool::kSparesPerSize});
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (auto& mine : got) {
    threads.emplace_back([&pool, &mine] {
      for (int i = 0; i < 200; ++i) {
        if (auto path = pool->Take(kMiB / 4)) mine.push_back(*path);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> distinct;
  size_t total = 0;
  for (const auto& mine : got) {
    total += mine.size();
    distinct.insert(mine.begin(), mine.end());
  }
  EXPECT_GE(total, size_t{BinrefOutputPool::kSparesPerSize});
  EXPECT_EQ(distinct.size(), total);
}

TEST_F(BinrefOutputPoolTest, RemovesPoolsNobodyHolds) {
  // A pool whose owner is gone (a worker ended with _Exit): an unlocked lock
  // file and a spare nobody will take.
  const fs::path orphan = scratch_ / ".tesscpp-binref-pool-999999-dead";
  fs::create_directories(orphan);
  { std::ofstream(orphan / "lock").put('x'); }
  { std::ofstream(orphan / "spare-0.bin") << std::string(4096, 'x'); }
  // Each pool's clean-up runs on its own thread, before its spares, so
  // WaitIdle after a Take waits for it. The held pool's comes first and
  // whole: two at once on one orphan let one skip it (the other holding its
  // lock) while the other was still removing it, and the check below could
  // find it (seen once in CI).
  auto held = *BinrefOutputPool::Create(out(), 16 * kMiB);
  (void)held->Take(kMiB);
  held->WaitIdle();
  auto pool = *BinrefOutputPool::Create(out(), 16 * kMiB);
  (void)pool->Take(kMiB);
  pool->WaitIdle();
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(held->dir())) << "a pool whose owner lives is kept";
}

TEST_F(BinrefOutputPoolTest, AForkedChildTakesNoneOfItsParentsSpares) {
  auto pool = *BinrefOutputPool::Create(out(), 16 * kMiB);
  (void)pool->Take(kMiB);
  pool->WaitIdle();
  ASSERT_EQ(pool->spares().files, size_t{BinrefOutputPool::kSparesPerSize});
  // Two processes handing out the same file would write two answers into
  // it; the child's copy also goes without joining a thread it does not have
  // or removing the parent's files.
  EXPECT_EQ(testing::FailureInChild([&pool] {
              const bool refused = !pool->Take(kMiB).has_value();
              pool.reset();
              return refused;
            }),
            "");
  EXPECT_TRUE(fs::exists(pool->dir()));
  EXPECT_EQ(pool->spares().files, size_t{BinrefOutputPool::kSparesPerSize});
  const std::optional<std::string> taken = pool->Take(kMiB);
  ASSERT_TRUE(taken.has_value());
  EXPECT_TRUE(fs::exists(*taken));
}

TEST_F(BinrefOutputPoolTest, ReportsADirectoryItCannotCreate) {
  const std::string file = (scratch_ / "a-file").string();
  { std::ofstream(file) << "x"; }
  auto pool = BinrefOutputPool::Create(file, kMiB);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("binref pool directory"), std::string::npos);
}

}  // namespace
}  // namespace tesscpp::runtime
