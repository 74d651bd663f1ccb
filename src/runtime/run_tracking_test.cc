// Run tracking in files (file_run_logger.h) and the Python spellings it
// writes (py_text.h), against what CPython and tesseract-core write.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/file_run_logger.h"
#include "runtime/py_text.h"
#include "runtime/run_dir.h"
#include "support/test_files.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/run_log.h"

namespace tesscpp::runtime {
namespace {

std::string Read(const std::filesystem::path& path) { return testing::ReadFile(path.string()); }

class RunTracking : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tesscpp_run_tracking_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(CreateRunDirectory(dir_.string()).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Values from json.dumps(..., indent=2) in CPython 3.11.
TEST(PyText, JsonDumpsLikePython) {
  Value::Dict p{
      {"dt", Value(0.01)},
      {"name", Value("caf\xc3\xa9 \"x\"\n")},
      {"n", Value(3)},
      {"flag", Value(true)},
      {"none", Value()},
      {"nested", Value(Value::Dict{{"a", Value(Value::List{Value(1), Value(2.5e-07), Value(Value::List{})})},
                                   {"b", Value(Value::Dict{})}})},
      {"big", Value(1e16)},
      {"emoji", Value("\xf0\x9f\x98\x80")},
      {"nan", Value(std::nan(""))}};
  EXPECT_EQ(PyJsonDumps(Value(p), 2),
            "{\n  \"dt\": 0.01,\n  \"name\": \"caf\\u00e9 \\\"x\\\"\\n\",\n  \"n\": 3,\n  \"flag\": true,\n  "
            "\"none\": "
            "null,\n  \"nested\": {\n    \"a\": [\n      1,\n      2.5e-07,\n      []\n    ],\n    \"b\": "
            "{}\n  },\n  "
            "\"big\": 1e+16,\n  \"emoji\": \"\\ud83d\\ude00\",\n  \"nan\": NaN\n}");
}

// str() of the same values in CPython.
TEST(PyText, StrLikePython) {
  EXPECT_EQ(PyStr(Value(Value::List{Value(1), Value("a"), Value(), Value(true),
                                    Value(Value::Dict{{"k", Value(2.0)}})})),
            "[1, 'a', None, True, {'k': 2.0}]");
  EXPECT_EQ(PyStr(Value(Value::Dict{{"k", Value("v")}, {"n", Value(Value::List{Value(1e-05)})}})),
            "{'k': 'v', 'n': [1e-05]}");
  EXPECT_EQ(PyStr(Value(0.1)), "0.1");
  EXPECT_EQ(PyStr(Value("plain")), "plain");
}

TEST(RunTrackingRows, QuotedAsPythonsCsvModule) {
  EXPECT_EQ(MetricsCsvRow("t", "loss", 0.5, 3), "t,loss,0.5,3\r\n");
  EXPECT_EQ(MetricsCsvRow("t", "a,b \"c\"", 1e-05, 0), "t,\"a,b \"\"c\"\"\",1e-05,0\r\n");
  EXPECT_EQ(MetricsCsvRow("t", "x", -INFINITY, 1), "t,x,-inf,1\r\n");
}

TEST_F(RunTracking, CountsStepsPerKeyAndKeepsGivenOnes) {
  FileRunLogger logger(dir_.string());
  ASSERT_TRUE(logger.LogMetric("loss", 1.0, std::nullopt).ok());
  ASSERT_TRUE(logger.LogMetric("acc", 0.5, 10).ok());
  ASSERT_TRUE(logger.LogMetric("loss", 0.5, std::nullopt).ok());
  ASSERT_TRUE(logger.LogMetric("acc", 0.75, std::nullopt).ok());  // acc's second value: step 1
  std::istringstream rows(Read(dir_ / "logs/metrics.csv"));
  std::vector<std::string> tails;
  for (std::string row; std::getline(rows, row);) tails.push_back(row.substr(row.find(',') + 1));
  EXPECT_EQ(tails, (std::vector<std::string>{"key,value,step\r", "loss,1.0,0\r", "acc,0.5,10\r",
                                             "loss,0.5,1\r", "acc,0.75,1\r"}));
  EXPECT_TRUE(logger.End().ok());
}

TEST_F(RunTracking, ParametersAreRewrittenWholeInFirstLoggedOrder) {
  FileRunLogger logger(dir_.string());
  ASSERT_TRUE(logger.LogParameter("b", Value(1)).ok());
  ASSERT_TRUE(logger.LogParameter("a", Value("x")).ok());
  ASSERT_TRUE(logger.LogParameter("b", Value(2.5)).ok());
  EXPECT_EQ(Read(dir_ / "logs/parameters.json"), "{\n  \"b\": 2.5,\n  \"a\": \"x\"\n}");
  auto tensor = Value(*Tensor::Allocate(Dtype::kFloat64, *Shape::Make({2})));
  const Status refused = logger.LogParameter("arr", Value(Value::List{tensor}));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("'arr' holds an array"), std::string::npos) << refused.message();
}

TEST_F(RunTracking, ArtifactsAreCopiedWithTheirTimes) {
  FileRunLogger logger(dir_.string());
  const auto source = dir_ / "result.txt";
  std::ofstream(source) << "bytes";
  const struct timespec old_times[2] = {{1000, 0}, {2000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, source.c_str(), old_times, 0), 0);
  ASSERT_TRUE(logger.LogArtifact(source.string()).ok());
  const auto copy = dir_ / "logs/artifacts/result.txt";
  EXPECT_EQ(Read(copy), "bytes");
  struct stat st {};
  ASSERT_EQ(::stat(copy.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);
  const Status missing = logger.LogArtifact((dir_ / "absent.txt").string());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "Artifact file not found: " + (dir_ / "absent.txt").string());
}

TEST_F(RunTracking, EndpointCodeReachesTheThreadsLogger) {
  EXPECT_EQ(LogMetric("loss", 1.0).code(), StatusCode::kInvalidArgument);  // no run yet
  FileRunLogger logger(dir_.string());
  {
    component::ScopedRunLogger scope(&logger, dir_.string());
    EXPECT_EQ(OutputDirectory(), dir_.string());
    EXPECT_TRUE(LogMetric("loss", 1.0).ok());
    EXPECT_TRUE(LogParameter("p", Value("v")).ok());
  }
  EXPECT_EQ(OutputDirectory(), "");
  const Status outside = LogMetric("loss", 2.0);
  EXPECT_NE(outside.message().find("No active run"), std::string::npos) << outside.message();
  EXPECT_NE(Read(dir_ / "logs/metrics.csv").find(",loss,1.0,0\r\n"), std::string::npos);
}

TEST(RunTrackingConfig, AnMlflowUriNeedsAnMlflowClient) {
  auto config = RuntimeConfig::FromSettings({{"mlflow_tracking_uri", "http://127.0.0.1:1"}});
  ASSERT_TRUE(config.ok());
  Component component("c", "1");
  component.Apply([](const ModelView&, Record&) { return Status::OK(); });
  auto runtime = cpp_kind::MakeRuntime(std::make_shared<const Component>(std::move(component)), *config);
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find("TESSERACT_MLFLOW_TRACKING_URI"), std::string::npos);
}

}  // namespace
}  // namespace tesscpp::runtime
