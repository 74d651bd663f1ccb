// file_test.cc: Fd's positioned writes, allocation and truncation, and
// MappedFile's view of them.
#include "tesscpp/internal/platform/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status_matchers.h"

namespace tesscpp::platform {
namespace {

namespace fs = std::filesystem;

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tesscpp-file-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

std::string Read(const Fd& fd, int64_t offset, int64_t length) {
  auto mapped = MappedFile::Map(fd, offset, length);
  EXPECT_OK(mapped);
  return {reinterpret_cast<const char*>(mapped->bytes().data()), mapped->bytes().size()};
}

TEST_F(FileTest, WritesAtOffsetsAndTruncates) {
  Fd fd = *Fd::Open(path("a.bin"), O_RDWR | O_CREAT | O_TRUNC);
  ASSERT_OK(fd.WriteAt(0, Bytes("hello")));
  ASSERT_OK(fd.WriteAt(8, Bytes("world")));  // leaves a hole of zeros
  EXPECT_EQ(*fd.Size(), 13);
  EXPECT_EQ(Read(fd, 0, 13), std::string("hello\0\0\0world", 13));
  EXPECT_EQ(Read(fd, 9, 3), "orl");      // an offset inside a page
  ASSERT_OK(fd.WriteAt(0, Bytes("J")));  // overwrites in place
  ASSERT_OK(fd.Truncate(4));
  EXPECT_EQ(*fd.Size(), 4);
  EXPECT_EQ(Read(fd, 0, 4), "Jell");
}

TEST_F(FileTest, ReserveAllocatesAndGrows) {
  Fd fd = *Fd::Open(path("b.bin"), O_RDWR | O_CREAT | O_TRUNC);
  ASSERT_OK(fd.Reserve(0, 1 << 20));
  EXPECT_EQ(*fd.Size(), 1 << 20);
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_GE(st.st_blocks * 512, 1 << 20);  // allocated, not a sparse file
  ASSERT_OK(fd.Reserve(0, 4096));          // inside: no change
  EXPECT_EQ(*fd.Size(), 1 << 20);
  EXPECT_EQ(Read(fd, 4096, 4), std::string(4, '\0'));
}

TEST_F(FileTest, ReportsWhatFailed) {
  const auto missing = Fd::Open(path("missing.bin"), O_RDONLY);
  EXPECT_STATUS(missing, StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.bin"), std::string::npos);
  Fd read_only = *Fd::Open(path("c.bin"), O_RDONLY | O_CREAT);
  EXPECT_STATUS(read_only.WriteAt(0, Bytes("x")), StatusCode::kIoError);
  const Status reserve = read_only.Reserve(0, 10);
  EXPECT_STATUS(reserve, StatusCode::kIoError);
  EXPECT_NE(reserve.message().find("fallocate"), std::string::npos);
  const Status truncate = read_only.Truncate(0);
  EXPECT_STATUS(truncate, StatusCode::kIoError);
  EXPECT_NE(truncate.message().find("ftruncate"), std::string::npos);
}

// TMPDIR wins; without it scratch directories go to tmpfs where there is one.
TEST_F(FileTest, ScratchDirectoriesPreferTmpfs) {
  const char* saved = std::getenv("TMPDIR");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("TMPDIR", dir_.c_str(), 1);
  const std::string in_tmpdir = *MakeScratchDir("scratch_");
  EXPECT_EQ(fs::path(in_tmpdir).parent_path(), dir_);
  ::unsetenv("TMPDIR");
  const std::string chosen = *MakeScratchDir("tesscpp-file-test-scratch_");
  EXPECT_EQ(fs::path(chosen).parent_path(),
            fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::path("/tmp"));
  EXPECT_TRUE(fs::is_directory(chosen));
  fs::remove_all(chosen);
  if (saved != nullptr) ::setenv("TMPDIR", restore.c_str(), 1);
}

}  // namespace
}  // namespace tesscpp::platform
