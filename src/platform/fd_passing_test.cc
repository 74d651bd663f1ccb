#include "platform/fd_passing.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "platform/uuid.h"

namespace tesscpp::platform {
namespace {

std::string UniqueName() { return "tesscpp-test-" + NewUuid4(); }

ino_t Inode(int fd) {
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return st.st_ino;
}

// Files to hand out: their inodes tell a received duplicate from anything else.
struct TempFiles {
  explicit TempFiles(size_t count) {
    for (size_t i = 0; i < count; ++i) {
      FILE* file = tmpfile();
      files.push_back(file);
      fds.push_back(fileno(file));
    }
  }
  ~TempFiles() {
    for (FILE* f : files) fclose(f);
  }
  std::vector<FILE*> files;
  std::vector<int> fds;
};

TEST(FdPassing, HandsOutTheDescriptorsARequestNames) {
  TempFiles files(600);  // more than one SCM_RIGHTS chunk (250)
  std::atomic<int> ticks{0};
  auto server = FdServer::Start(
      UniqueName(),
      [&](std::string_view request) -> Result<std::vector<int>> {
        if (request == "none") return std::vector<int>();
        if (request == "one") return std::vector<int>{files.fds[7]};
        if (request == "all") return files.fds;
        return Status::NotFound("no such thing: '", request, "'");
      },
      [&] { ++ticks; }, 10);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string& name = (*server)->name();
  EXPECT_TRUE(AbstractSocketListening(name));

  auto one = RequestFds(name, "one", 1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_NE((*one)[0].get(), files.fds[7]);  // a duplicate, ours to close
  EXPECT_EQ(Inode((*one)[0].get()), Inode(files.fds[7]));

  auto all = RequestFds(name, "all", files.fds.size());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), files.fds.size());
  for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ(Inode((*all)[i].get()), Inode(files.fds[i])) << i;

  auto none = RequestFds(name, "none", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto refused = RequestFds(name, "the moon", 1);
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);
  EXPECT_NE(refused.status().message().find("no such thing: 'the moon'"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(RequestFds(name, "two\nlines", 1).status().code(), StatusCode::kInvalidArgument);
  // Another count than asked for is refused before anything is received.
  auto miscounted = RequestFds(name, "all", 3);
  EXPECT_EQ(miscounted.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(miscounted.status().message().find("answered 600 descriptors for 3 asked"), std::string::npos)
      << miscounted.status().message();
  for (int i = 0; i < 100 && ticks.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(ticks.load(), 0);
}

TEST(FdPassing, TicksOnTheClockNotPerConnection) {
  // A tick may connect to peers whose servers would tick back: ticking per
  // connection made two such processes wake each other without end.
  std::atomic<int> ticks{0};
  auto server = FdServer::Start(
      UniqueName(), [](std::string_view) { return Result<std::vector<int>>(std::vector<int>()); },
      [&] { ++ticks; }, 1000);
  ASSERT_TRUE(server.ok());
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(AbstractSocketListening((*server)->name()));
  EXPECT_LE(ticks.load(), 1);
}

TEST(FdPassing, SaysWhenNothingListens) {
  const std::string name = UniqueName();
  EXPECT_FALSE(AbstractSocketListening(name));
  auto missing = RequestFds(name, "one", 1);
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("nothing listens on the Unix socket @" + name), std::string::npos)
      << missing.status().message();
  {
    auto server =
        FdServer::Start(name, [](std::string_view) { return Result<std::vector<int>>(std::vector<int>()); });
    ASSERT_TRUE(server.ok());
    EXPECT_TRUE(AbstractSocketListening(name));
    // The name is taken while the server lives.
    EXPECT_EQ(FdServer::Start(name, nullptr).status().code(), StatusCode::kUnavailable);
  }
  EXPECT_FALSE(AbstractSocketListening(name));  // gone with the server
  EXPECT_EQ(FdServer::Start(std::string(200, 'x'), nullptr).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tesscpp::platform
