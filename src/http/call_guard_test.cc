#include "http/call_guard.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace tesscpp::http {
namespace {

// A connection as a socket pair: the client's end, and the server's end a
// worker would have accepted.
struct Connection {
  platform::Fd client;
  platform::Fd server;
};

Connection Connect() {
  int ends[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
  return {platform::Fd(ends[0]), platform::Fd(ends[1])};
}

// What the client reads until the connection closes (or 5 s pass).
std::string ReadToEnd(const platform::Fd& client) {
  std::string text;
  char chunk[512];
  pollfd wait{client.get(), POLLIN, 0};
  while (::poll(&wait, 1, 5000) == 1) {
    const ssize_t got = ::read(client.get(), chunk, sizeof chunk);
    if (got <= 0) return text;
    text.append(chunk, static_cast<size_t>(got));
  }
  return text + "<still open>";
}

TEST(CallGuard, AWorkerThatDiesInACallHasItAnswered500) {
  auto guard = CallGuard::Create();
  ASSERT_TRUE(guard.ok()) << guard.status();
  auto channel = (*guard)->Open(0);
  ASSERT_TRUE(channel.ok()) << channel.status();
  Connection computing = Connect(), idle = Connect();
  // The worker is a child process, killed inside the call as a segfault would end it.
  const pid_t worker = ::fork();
  if (worker == 0) {
    CallReporter reporter((*guard)->table(), 0, *std::move(channel));
    CallReporter::SetThreadCell(1);
    (void)reporter.Accepted(idle.server.get());
    reporter.Begin(reporter.Accepted(computing.server.get()));
    ::raise(SIGKILL);
  }
  *channel = platform::Fd();          // the worker's end is the child's now
  computing.server = platform::Fd();  // the worker's copies die with it; ours go too
  idle.server = platform::Fd();
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ((*guard)->Settle(0), 1);
  const std::string answer = ReadToEnd(computing.client);
  EXPECT_EQ(answer.rfind("HTTP/1.1 500 Internal Server Error\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("\r\n\r\nInternal Server Error"), std::string::npos) << answer;
  EXPECT_EQ(ReadToEnd(idle.client), "");  // closed, unanswered: nothing was asked
}

TEST(CallGuard, CallsThatEndedAndConnectionsThatClosedAreNotAnswered) {
  auto guard = CallGuard::Create();
  ASSERT_TRUE(guard.ok());
  auto channel = (*guard)->Open(3);
  ASSERT_TRUE(channel.ok());
  CallReporter reporter((*guard)->table(), 3, *std::move(channel));
  CallReporter::SetThreadCell(0);
  Connection answered = Connect(), closed = Connect();
  reporter.Begin(reporter.Accepted(answered.server.get()));
  reporter.End();
  const uint64_t gone = reporter.Accepted(closed.server.get());
  ASSERT_NE(gone, 0u);
  closed.server = platform::Fd();
  reporter.Closed(gone);
  (*guard)->Read(3);
  // The supervisor's copy went with the message: the client sees the close now.
  EXPECT_EQ(ReadToEnd(closed.client), "");
  EXPECT_EQ((*guard)->Settle(3), 0);
}

TEST(CallGuard, ChannelsAreFreshPerWorkerAndLimitedToTheTable) {
  auto guard = CallGuard::Create();
  ASSERT_TRUE(guard.ok());
  ASSERT_TRUE((*guard)->Open(0).ok());
  ASSERT_TRUE((*guard)->Open(1).ok());
  EXPECT_EQ((*guard)->Channels().size(), 2u);
  EXPECT_EQ((*guard)->Open(CallTable::kMaxSlots).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*guard)->Settle(1), 0);
  EXPECT_EQ((*guard)->Channels().size(), 1u);
}

}  // namespace
}  // namespace tesscpp::http
