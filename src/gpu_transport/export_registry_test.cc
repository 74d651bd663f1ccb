// Export-group bookkeeping: what is kept for which client, and for how long.
#include "gpu_transport/export_registry.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace tesscpp::gpu_transport {
namespace {

std::vector<std::shared_ptr<void>> Pins(const std::shared_ptr<int>& tracked) { return {tracked}; }

TEST(ExportRegistry, AcknowledgedGroupsLiveUntilNamed) {
  ExportRegistry registry;
  auto memory = std::make_shared<int>(1);
  const auto id = registry.Keep(Pins(memory), /*acknowledged=*/true);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->size(), 32U);
  EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(memory.use_count(), 2);
  registry.BeforeEndpoint(/*acknowledged=*/false);     // others' calls do not free it
  registry.OnRequest(std::string(""));                 // nor an empty header
  registry.OnRequest(std::string("unknown, ") + *id);  // no trimming: " <id>" is another id
  EXPECT_EQ(memory.use_count(), 2);
  registry.OnRequest("unknown," + *id);
  EXPECT_EQ(memory.use_count(), 1);
  EXPECT_EQ(registry.size(), 0U);
}

TEST(ExportRegistry, ClientsThatNeverAcknowledgeAreFreedAtTheirNextCall) {
  ExportRegistry registry;
  auto memory = std::make_shared<int>(1);
  ASSERT_TRUE(registry.Keep(Pins(memory), /*acknowledged=*/false));
  registry.BeforeEndpoint(/*acknowledged=*/true);
  EXPECT_EQ(memory.use_count(), 2);
  registry.BeforeEndpoint(/*acknowledged=*/false);
  EXPECT_EQ(memory.use_count(), 1);
  EXPECT_FALSE(registry.Keep({}, true).has_value());  // nothing exported, no id
}

TEST(ExportRegistry, GroupsTimeOutUnlessALiveBorrowerHoldsThem) {
  auto now = std::chrono::steady_clock::now();
  ExportRegistry registry([&now] { return now; });
  auto plain = std::make_shared<int>(1);
  auto leased = std::make_shared<int>(2);
  ASSERT_TRUE(registry.Keep(Pins(plain), /*acknowledged=*/true).has_value());
  ASSERT_TRUE(registry.Keep(Pins(leased), true, platform::ProcessIdentity::Self()).has_value());
  now += ExportRegistry::kTimeout;
  registry.BeforeEndpoint(/*acknowledged=*/true);  // not past the timeout yet
  EXPECT_EQ(plain.use_count(), 2);
  now += std::chrono::seconds(1);
  registry.OnRequest(std::string("unknown"));  // any request's sweep frees what timed out
  EXPECT_EQ(plain.use_count(), 1);
  now += std::chrono::hours(24);  // the lease has no timeout while its borrower lives
  registry.BeforeEndpoint(/*acknowledged=*/true);
  EXPECT_EQ(leased.use_count(), 2);
  EXPECT_EQ(registry.size(), 1U);
}

TEST(ExportRegistry, BorrowedGroupsLiveAsLongAsTheirBorrower) {
  using platform::ProcessIdentity;
  int hold[2];
  ASSERT_EQ(pipe(hold), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // lives until the pipe closes
    char byte;
    close(hold[1]);
    (void)!read(hold[0], &byte, 1);
    _exit(0);
  }
  close(hold[0]);
  const std::optional<ProcessIdentity> borrower = ProcessIdentity::Of(child);
  ASSERT_TRUE(borrower.has_value());

  ExportRegistry registry;
  auto ours = std::make_shared<int>(1);
  auto theirs = std::make_shared<int>(2);
  const auto our_id = registry.Keep(Pins(ours), true, ProcessIdentity::Self());
  ASSERT_TRUE(registry.Keep(Pins(theirs), true, borrower).has_value());
  registry.BeforeEndpoint(/*acknowledged=*/false);
  registry.OnRequest(std::string("unknown"));
  EXPECT_EQ(theirs.use_count(), 2);

  close(hold[1]);  // the borrower exits
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(borrower->Alive());
  registry.BeforeEndpoint(/*acknowledged=*/true);  // the next sweep frees what it held
  EXPECT_EQ(theirs.use_count(), 1);
  EXPECT_EQ(ours.use_count(), 2);
  registry.OnRequest(*our_id);  // a live borrower's acknowledgement frees its group
  EXPECT_EQ(ours.use_count(), 1);
  EXPECT_EQ(registry.size(), 0U);
}

}  // namespace
}  // namespace tesscpp::gpu_transport
