// phase_trace_test.cc: the trace line's shape, nesting and the off switch.
// TESSCPP_PHASE_TRACE is read once per process, so it is set before the first
// trace of this test binary and every test reads the same file.
#include "platform/phase_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tesscpp::platform {
namespace {

namespace fs = std::filesystem;

const std::string& TracePath() {
  static const std::string path = [] {
    std::string p =
        (fs::temp_directory_path() / ("tesscpp-phase-trace-" + std::to_string(::getpid()))).string();
    ::setenv("TESSCPP_PHASE_TRACE", p.c_str(), 1);
    return p;
  }();
  return path;
}

std::string ReadTrace() {
  std::ifstream in(TracePath());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Emptied, not removed: the file is opened once per process and appended to.
void EmptyTrace() { std::ofstream(TracePath(), std::ios::trunc); }

class PhaseTraceTest : public ::testing::Test {
 protected:
  void SetUp() override { EmptyTrace(); }
  static void TearDownTestSuite() { fs::remove(TracePath()); }
};

TEST_F(PhaseTraceTest, WritesOneLineWithItsPhases) {
  {
    PhaseTrace trace("server", "/apply");
    PhaseTrace::Mark("read");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    PhaseTrace::Mark("apply");
    PhaseTrace::Mark("read");  // adds to the first
  }
  const std::string line = ReadTrace();
  ASSERT_EQ(line.find(R"({"side":"server","what":"/apply","total_us":)"), 0u) << line;
  EXPECT_NE(line.find(R"(,"us":{"read":)"), std::string::npos) << line;
  const size_t apply = line.find(R"("apply":)");
  ASSERT_NE(apply, std::string::npos) << line;
  EXPECT_GE(std::stod(line.substr(apply + 8)), 2000.0) << line;  // the sleep
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line
}

TEST_F(PhaseTraceTest, NestedTracesTakeTheirOwnMarks) {
  {
    PhaseTrace outer("client", "apply");
    PhaseTrace::Mark("encode");
    {
      PhaseTrace inner("server", "/apply\"quoted\"");
      PhaseTrace::Mark("apply");
    }
    PhaseTrace::Mark("decode");
  }
  std::istringstream lines(ReadTrace());
  std::string inner, outer;
  std::getline(lines, inner);
  std::getline(lines, outer);
  EXPECT_NE(inner.find(R"("what":"/applyquoted")"), std::string::npos) << inner;  // quotes dropped
  EXPECT_NE(inner.find(R"("us":{"apply":)"), std::string::npos) << inner;
  EXPECT_NE(outer.find(R"("us":{"encode":)"), std::string::npos) << outer;
  EXPECT_NE(outer.find(R"("decode":)"), std::string::npos) << outer;
  EXPECT_EQ(outer.find(R"("apply":)"), std::string::npos) << outer;
}

TEST_F(PhaseTraceTest, MarksWithoutATraceAreIgnored) {
  PhaseTrace::Mark("nothing");
  EXPECT_EQ(ReadTrace(), "");
}

}  // namespace
}  // namespace tesscpp::platform
