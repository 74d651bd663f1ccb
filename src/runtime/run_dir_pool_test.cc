// run_dir_pool_test.cc: spares are whole run directories, handed out once
// under distinct run_ids, renamed into the output path, and removed with the
// pool; pools nobody holds are removed, held ones kept; a forked child leaves
// its parent's pool alone.
#include "runtime/run_dir_pool.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "support/in_child.h"
#include "support/test_files.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::runtime {
namespace {

namespace fs = std::filesystem;

class RunDirectoryPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = platform::MakeTempDir("tesscpp-run-pool-test-");
    ASSERT_TRUE(made.ok()) << made.status().message();
    out_ = *made;
  }
  void TearDown() override { fs::remove_all(out_); }

  // Names in the output path: the runs, and the pools apart.
  std::set<std::string> Entries(bool pools = false) const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(out_)) {
      const std::string name = entry.path().filename().string();
      if ((name.rfind(".tesscpp-run-pool-", 0) == 0) == pools) names.insert(name);
    }
    return names;
  }

  fs::path out_;
};

TEST_F(RunDirectoryPoolTest, HandsOutWholeRunDirectoriesOnce) {
  auto pool = *RunDirectoryPool::Create(out_.string(), /*tracked_in_files=*/true);
  pool->WaitIdle();
  EXPECT_EQ(pool->spares(), RunDirectoryPool::kSpares);
  EXPECT_TRUE(Entries().empty()) << "spares stay hidden until taken";

  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto run = pool->Take();
    if (!run) {  // none ready: the caller would make its own
      pool->WaitIdle();
      run = pool->Take();
    }
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->id.size(), 36u);
    EXPECT_EQ(run->dir, (out_ / ("run_" + run->id)).string());
    EXPECT_TRUE(ids.insert(run->id).second) << "run_id handed out twice: " << run->id;
    // What CreateRunDirectory makes, the log writable through the open fd.
    EXPECT_TRUE(fs::is_directory(run->dir + "/logs/artifacts"));
    EXPECT_EQ(testing::ReadFile(run->dir + "/logs/metrics.csv"), "timestamp,key,value,step\r\n");
    ASSERT_EQ(::write(run->log.get(), "line\n", 5), 5);
    EXPECT_EQ(testing::ReadFile(run->dir + "/logs/tesseract.log"), "line\n");
  }
  EXPECT_EQ(Entries().size(), 5u);
  pool.reset();
  EXPECT_EQ(Entries().size(), 5u) << "taken runs stay";
  EXPECT_TRUE(Entries(/*pools=*/true).empty()) << "the pool and its spares go with it";
}

TEST_F(RunDirectoryPoolTest, MlflowRunsGetOnlyTheirLog) {
  auto pool = *RunDirectoryPool::Create(out_.string(), /*tracked_in_files=*/false);
  pool->WaitIdle();
  auto run = pool->Take();
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(fs::exists(run->dir + "/logs/tesseract.log"));
  EXPECT_FALSE(fs::exists(run->dir + "/logs/metrics.csv"));
  EXPECT_FALSE(fs::exists(run->dir + "/logs/artifacts"));
}

TEST_F(RunDirectoryPoolTest, RemovesPoolsNobodyHolds) {
  // A pool whose owner is gone: its lock file, unlocked.
  const fs::path orphan = out_ / ".tesscpp-run-pool-999999-dead";
  fs::create_directories(orphan / "spare/logs");
  { std::ofstream(orphan / "lock").put('x'); }
  // Not a pool of ours (no lock file): never touched.
  const fs::path foreign = out_ / ".tesscpp-run-pool-other";
  fs::create_directories(foreign);
  auto held = *RunDirectoryPool::Create(out_.string(), true);
  held->WaitIdle();
  auto pool = *RunDirectoryPool::Create(out_.string(), true);
  pool->WaitIdle();  // the clean-up runs on the pool's thread, before its spares
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_EQ(Entries(/*pools=*/true).size(), 3u) << "the held pool, the new one and the foreign directory";
  EXPECT_TRUE(held->Take().has_value()) << "a held pool keeps working";
}

TEST_F(RunDirectoryPoolTest, AForkedChildLeavesItsParentsPoolAlone) {
  auto pool = *RunDirectoryPool::Create(out_.string(), true);
  pool->WaitIdle();
  const std::set<std::string> pools = Entries(/*pools=*/true);
  // No spare for the child, and its copy goes without joining a thread it
  // does not have or removing the parent's files.
  EXPECT_EQ(testing::FailureInChild([&pool] {
              const bool refused = !pool->Take().has_value();
              pool.reset();
              return refused;
            }),
            "");
  EXPECT_EQ(Entries(/*pools=*/true), pools);
  EXPECT_TRUE(pool->Take().has_value());
}

TEST_F(RunDirectoryPoolTest, StopsMakingSparesWhenTheOutputPathGoes) {
  auto pool = *RunDirectoryPool::Create(out_.string(), true);
  pool->WaitIdle();
  fs::remove_all(out_);
  EXPECT_FALSE(pool->Take().has_value()) << "a spare that cannot be renamed out is not handed out";
  pool->WaitIdle();  // returns: the failure stops the thread from retrying in a loop
  fs::create_directories(out_);
}

}  // namespace
}  // namespace tesscpp::runtime
