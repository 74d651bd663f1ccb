// run_dir_pool_test.cc: spares are whole run directories, handed out once
// under distinct run_ids, renamed into the output path, and removed with the
// pool; orphaned pools of dead processes are removed, live ones kept.
#include "runtime/run_dir_pool.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "support/test_files.h"

namespace tesscpp::runtime {
namespace {

namespace fs = std::filesystem;

class RunDirectoryPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tesscpp-run-pool-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    out_ = pattern;
  }
  void TearDown() override { fs::remove_all(out_); }

  // Names in the output path, the pool's own directory left out.
  std::set<std::string> Entries() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(out_)) {
      const std::string name = entry.path().filename().string();
      if (name != ".tesscpp-run-pool-" + std::to_string(::getpid())) names.insert(name);
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
  EXPECT_FALSE(fs::exists(out_ / (".tesscpp-run-pool-" + std::to_string(::getpid()))));
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

TEST_F(RunDirectoryPoolTest, RemovesPoolsOfProcessesThatAreGone) {
  // A pid that certainly ran and is gone: a child that has been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const fs::path orphan = out_ / (".tesscpp-run-pool-" + std::to_string(child)) / "spare/logs";
  const fs::path alive = out_ / (".tesscpp-run-pool-" + std::to_string(::getppid())) / "spare/logs";
  fs::create_directories(orphan);
  fs::create_directories(alive);
  auto pool = *RunDirectoryPool::Create(out_.string(), true);
  EXPECT_FALSE(fs::exists(orphan.parent_path().parent_path()));
  EXPECT_TRUE(fs::exists(alive));
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
