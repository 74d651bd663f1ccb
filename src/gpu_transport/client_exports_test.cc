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
  EXPECT_EQ(acks.Take(/*always=*/false, /*wait=*/false).ids, std::nullopt);
  EXPECT_EQ(acks.Take(/*always=*/true, /*wait=*/false).ids, Ids{});  // "none yet", for the lease
  acks.Add("a");
  acks.Requeue({"b", "c"});
  EXPECT_EQ(acks.Take(false, false).ids, (Ids{"a", "b", "c"}));
  EXPECT_EQ(acks.Take(false, false).ids, std::nullopt);
}

TEST(ExportAcks, AnIdWhoseDeviceWorkRunsWaitsForALaterRequest) {
  ExportAcks acks;
  auto done = std::make_shared<bool>(false);
  auto asked_to_wait = std::make_shared<std::vector<bool>>();
  acks.Add("busy", [done, asked_to_wait](bool wait) -> Result<bool> {
    asked_to_wait->push_back(wait);
    return *done;
  });
  acks.Add("free");
  // The request goes without the busy id, and without waiting for it.
  EXPECT_EQ(acks.Take(true, false).ids, Ids{"free"});
  EXPECT_EQ(acks.Take(true, false).ids, Ids{});
  acks.Add("later");
  *done = true;
  EXPECT_EQ(acks.Take(false, false).ids, (Ids{"busy", "later"}));  // it keeps its place
  EXPECT_EQ(*asked_to_wait, (std::vector<bool>{false, false, false}));
}

TEST(ExportAcks, ClosingWaitsForTheDeviceWork) {
  ExportAcks acks;
  auto waited = std::make_shared<bool>(false);
  acks.Add("busy", [waited](bool wait) -> Result<bool> { return *waited = wait; });
  EXPECT_EQ(acks.Take(false, /*wait=*/true).ids, Ids{"busy"});
  EXPECT_TRUE(*waited);
}

TEST(ExportAcks, OutputsOnNoDeviceNeedNoWait) { EXPECT_EQ(AfterDeviceWork({}), nullptr); }

TEST(ExportAcks, WorkThatCannotBeProvenFinishedIsNeverAcknowledged) {
  ExportAcks acks;
  auto broken = std::make_shared<bool>(true);
  acks.Add("unproven", [broken](bool) -> Result<bool> {
    if (*broken) return Status::Internal("cudaEventQuery failed: an illegal memory access");
    return true;
  });
  acks.Add("free");
  for (const bool wait : {false, true}) {
    ExportAcks::Taken taken = acks.Take(/*always=*/true, wait);
    EXPECT_EQ(taken.ids, Ids{"free"});  // what can be proven goes
    EXPECT_EQ(taken.unproven.code(), StatusCode::kInternal);
    EXPECT_NE(taken.unproven.message().find("stays held"), std::string::npos) << taken.unproven;
    acks.Add("free");
  }
  *broken = false;  // the device answers again: the held id leaves
  EXPECT_EQ(acks.Take(false, false).ids, (Ids{"unproven", "free"}));
}

TEST(ExportAcks, AMarkThatCannotBeTakenFallsBackToTheDevice) {
  if (cuda::CheckAvailable().ok()) GTEST_SKIP() << "a GPU is here: the mark is taken (python_gpu tests it)";
  // Without a GPU neither a mark nor the synchronisation can be had: nothing
  // proves the work done, so the id is not acknowledged.
  const ExportAcks::Ready ready = AfterDeviceWork({0});
  ASSERT_NE(ready, nullptr);
  EXPECT_FALSE(ready(false).ok());
  EXPECT_FALSE(ready(true).ok());
}

}  // namespace
}  // namespace tesscpp::gpu_transport
