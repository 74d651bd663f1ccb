#include "http/worker_exec.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tesscpp/internal/http/http_server.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp::http {
namespace {

int Cloexec(int fd) { return ::fcntl(fd, F_GETFD) & FD_CLOEXEC; }

// Starts `exec` with no signal blocked and waits for it: the wait status.
int RunToExit(const WorkerExec& exec) {
  sigset_t mask;
  sigemptyset(&mask);
  const pid_t pid = exec.Start(mask);
  EXPECT_GT(pid, 0);
  int status = -1;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

TEST(WorkerExec, TheChildGetsTheHandoffAndBothDescriptors) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  platform::Fd a(pipe_fds[0]), b(pipe_fds[1]);
  // The shell exits 0 only when the variable names both descriptors and
  // slot 3, and both are open in it.
  const std::string check = "test \"$TESSCPP_WORKER_HANDOFF\" = \"" + std::to_string(a.get()) + "," +
                            std::to_string(b.get()) + ",3\" && test -e /proc/self/fd/" +
                            std::to_string(a.get()) + " && test -e /proc/self/fd/" + std::to_string(b.get());
  const int status = RunToExit(WorkerExec({"/bin/sh", "-c", check}, a.get(), b.get(), 3));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(Cloexec(a.get()), 0);  // this process's copies are untouched
}

TEST(WorkerExec, AGuardedChildGetsFourDescriptors) {
  int first[2], second[2];
  ASSERT_EQ(::pipe2(first, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(second, O_CLOEXEC), 0);
  platform::Fd a(first[0]), b(first[1]), c(second[0]), d(second[1]);
  std::string check = "test \"$TESSCPP_WORKER_HANDOFF\" = \"" + std::to_string(a.get()) + "," +
                      std::to_string(b.get()) + ",0," + std::to_string(c.get()) + "," +
                      std::to_string(d.get()) + "\"";
  for (const int fd : {a.get(), b.get(), c.get(), d.get()})
    check += " && test -e /proc/self/fd/" + std::to_string(fd);
  const int status = RunToExit(WorkerExec({"/bin/sh", "-c", check}, a.get(), b.get(), 0, c.get(), d.get()));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(WorkerExec, AFailedExecExits127) {
  const int status = RunToExit(WorkerExec({"/nonexistent/tesscpp-worker"}, 0, 1, 0));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 127) << status;
}

TEST(TakeWorkerHandoff, AbsentIsNoHandoff) {
  ::unsetenv(kWorkerHandoffVariable);
  auto handoff = TakeWorkerHandoff();
  ASSERT_TRUE(handoff.ok()) << handoff.status();
  EXPECT_FALSE(handoff->has_value());
}

TEST(TakeWorkerHandoff, ReadsRemovesAndClosesOnExec) {
  platform::Fd a(::open("/dev/null", O_RDONLY)), b(::open("/dev/null", O_RDONLY));
  const std::string value = std::to_string(a.get()) + "," + std::to_string(b.get()) + ",7";
  ::setenv(kWorkerHandoffVariable, value.c_str(), 1);
  auto handoff = TakeWorkerHandoff();
  ASSERT_TRUE(handoff.ok()) << handoff.status();
  ASSERT_TRUE(handoff->has_value());
  EXPECT_EQ((*handoff)->listen_fd, a.get());
  EXPECT_EQ((*handoff)->metrics_fd, b.get());
  EXPECT_EQ((*handoff)->slot, 7);
  EXPECT_EQ(std::getenv(kWorkerHandoffVariable), nullptr);
  EXPECT_NE(Cloexec(a.get()), 0);
  EXPECT_NE(Cloexec(b.get()), 0);
}

TEST(TakeWorkerHandoff, AGuardedWorkerIsHandedItsTableAndChannel) {
  platform::Fd a(::open("/dev/null", O_RDONLY)), b(::open("/dev/null", O_RDONLY));
  platform::Fd c(::open("/dev/null", O_RDONLY)), d(::open("/dev/null", O_RDONLY));
  const std::string value = std::to_string(a.get()) + "," + std::to_string(b.get()) + ",2," +
                            std::to_string(c.get()) + "," + std::to_string(d.get());
  ::setenv(kWorkerHandoffVariable, value.c_str(), 1);
  auto handoff = TakeWorkerHandoff();
  ASSERT_TRUE(handoff.ok()) << handoff.status();
  ASSERT_TRUE(handoff->has_value());
  EXPECT_EQ((*handoff)->calls_fd, c.get());
  EXPECT_EQ((*handoff)->channel_fd, d.get());
  EXPECT_NE(Cloexec(c.get()), 0);
  EXPECT_NE(Cloexec(d.get()), 0);
}

TEST(TakeWorkerHandoff, MalformedValuesNameTheVariable) {
  for (const char* value :
       {"", "3", "3,4", "3,4,", "a,4,0", "3,4,-1", "3,4,0,9", "3 ,4,0", "3,4,0,5,", "3,4,0,5,6,7"}) {
    ::setenv(kWorkerHandoffVariable, value, 1);
    auto handoff = TakeWorkerHandoff();
    ASSERT_FALSE(handoff.ok()) << value;
    EXPECT_EQ(handoff.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(handoff.status().message().find(kWorkerHandoffVariable), std::string::npos);
  }
}

TEST(TakeWorkerHandoff, ADescriptorNotOpenIsRefused) {
  ::setenv(kWorkerHandoffVariable, "1000000,1000001,0", 1);
  auto handoff = TakeWorkerHandoff();
  ASSERT_FALSE(handoff.ok());
  EXPECT_NE(handoff.status().message().find("descriptor 1000000"), std::string::npos) << handoff.status();
}

}  // namespace
}  // namespace tesscpp::http
