// The client's acknowledgements of server exports: which ids leave with a
// request, and when ids of borrowed outputs may.
#include "gpu_transport/client_exports.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tesscpp::gpu_transport {
namespace {

using Ids = std::vector<std::string>;

TEST(ExportAcks, NothingToSayIsSaidOnlyWhenAsked) {
  ExportAcks acks;
  EXPECT_EQ(acks.Take(/*always=*/false, /*wait=*/false), std::nullopt);
  EXPECT_EQ(acks.Take(/*always=*/true, /*wait=*/false), Ids{});  // "none yet", for the lease
  acks.Add("a");
  acks.Requeue({"b", "c"});
  EXPECT_EQ(acks.Take(false, false), (Ids{"a", "b", "c"}));
  EXPECT_EQ(acks.Take(false, false), std::nullopt);
}

TEST(ExportAcks, AnIdWhoseDeviceWorkRunsWaitsForALaterRequest) {
  ExportAcks acks;
  auto done = std::make_shared<bool>(false);
  auto asked_to_wait = std::make_shared<std::vector<bool>>();
  acks.Add("busy", [done, asked_to_wait](bool wait) {
    asked_to_wait->push_back(wait);
    return *done;
  });
  acks.Add("free");
  // The request goes without the busy id, and without waiting for it.
  EXPECT_EQ(acks.Take(true, false), Ids{"free"});
  EXPECT_EQ(acks.Take(true, false), Ids{});
  acks.Add("later");
  *done = true;
  EXPECT_EQ(acks.Take(false, false), (Ids{"busy", "later"}));  // it keeps its place
  EXPECT_EQ(*asked_to_wait, (std::vector<bool>{false, false, false}));
}

TEST(ExportAcks, ClosingWaitsForTheDeviceWork) {
  ExportAcks acks;
  auto waited = std::make_shared<bool>(false);
  acks.Add("busy", [waited](bool wait) { return *waited = wait; });
  EXPECT_EQ(acks.Take(false, /*wait=*/true), Ids{"busy"});
  EXPECT_TRUE(*waited);
}

TEST(ExportAcks, OutputsOnNoDeviceNeedNoWait) { EXPECT_EQ(AfterDeviceWork({}), nullptr); }

TEST(ExportAcks, AMarkThatCannotBeTakenFallsBackToTheDevice) {
  if (cuda::CheckAvailable().ok()) GTEST_SKIP() << "a GPU is here: the mark is taken (python_gpu tests it)";
  // Without a GPU neither a mark nor the synchronisation can be had; the id
  // still leaves (the device is unusable, nothing reads the memory).
  const ExportAcks::Ready ready = AfterDeviceWork({0});
  ASSERT_NE(ready, nullptr);
  EXPECT_TRUE(ready(false));
}

}  // namespace
}  // namespace tesscpp::gpu_transport
