#include "platform/process_identity.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <optional>

namespace tesscpp::platform {
namespace {

TEST(ProcessIdentity, NamesAProcessAsLongAsItLives) {
  const std::optional<ProcessIdentity> self = ProcessIdentity::Self();
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->pid, getpid());
  EXPECT_TRUE(self->Alive());
  EXPECT_EQ(ProcessIdentity::Parse(self->ToString()), self);
  EXPECT_FALSE((ProcessIdentity{self->pid, self->start_ticks + 1}.Alive()));  // an earlier holder of the pid
  for (const char* text : {"", "12", "12:", ":12", "0:5", "-3:5", "1:2:3", "x:1", "1:1x", " 1:1"}) {
    EXPECT_FALSE(ProcessIdentity::Parse(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace tesscpp::platform
