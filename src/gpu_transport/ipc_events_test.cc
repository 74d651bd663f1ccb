#include "gpu_transport/ipc_events.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tesscpp::gpu_transport {
namespace {

TEST(IpcEventsHeader, RoundTripsAndRefusesMalformedValues) {
  cuda::IpcEvent first;
  first.device_uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  first.handle.fill(0xAB);
  cuda::IpcEvent second = first;
  second.device_uuid = "ffffffff-0405-0607-0809-0a0b0c0d0e0f";
  second.handle[0] = 1;
  const std::string text = FormatIpcEvents({first, second});
  EXPECT_EQ(text.substr(0, 37), first.device_uuid + ":");
  EXPECT_EQ(std::count(text.begin(), text.end(), ','), 1);
  auto parsed = ParseIpcEvents(text);
  ASSERT_OK(parsed);
  EXPECT_EQ(*parsed, (std::vector<cuda::IpcEvent>{first, second}));
  const std::string one = FormatIpcEvents({first});
  for (const std::string& bad : {
           std::string(),                         // no event
           one + ",",                             // an empty second one
           first.device_uuid,                     // no handle
           first.device_uuid + ":",               // an empty handle
           one + ":0",                            // a third field
           "GPU-" + one,                          // not the UUID spelling
           first.device_uuid + ":q6urqw==",       // 4 bytes
           one.substr(0, one.size() - 2) + "*=",  // not base64
       }) {
    EXPECT_FALSE(ParseIpcEvents(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace tesscpp::gpu_transport
