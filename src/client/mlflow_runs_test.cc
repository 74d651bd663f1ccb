// What MlflowRunLoggers accepts and refuses before any run (the runs
// themselves: tests/conformance/test_run_tracking.py, against mlflow server).
#include "tesscpp/internal/client/mlflow_runs.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tesscpp::client {
namespace {

Status Made(std::vector<std::pair<std::string, std::string>> settings) {
  auto config = RuntimeConfig::FromSettings(settings);
  if (!config.ok()) return config.status();
  return MlflowRunLoggers(*config).status();
}

std::string Message(const Status& s) { return s.message(); }

TEST(MlflowRuns, NoUriNoFactory) {
  auto config = RuntimeConfig::FromSettings({});
  ASSERT_TRUE(config.ok());
  auto factory = MlflowRunLoggers(*config);
  ASSERT_TRUE(factory.ok());
  EXPECT_FALSE(static_cast<bool>(*factory));
}

TEST(MlflowRuns, TakesPythonAndJsonLiterals) {
  EXPECT_TRUE(Made({{"mlflow_tracking_uri", "http://127.0.0.1:1"},
                    {"mlflow_run_extra_args",
                     R"({"run_name": "a", "nested": True, "log_system_metrics": None, "tags": {"k": 1}})"}})
                  .ok());
  EXPECT_TRUE(
      Made({{"mlflow_tracking_uri", "127.0.0.1:1"}, {"mlflow_run_extra_args", R"({"nested": false})"}}).ok());
}

TEST(MlflowRuns, ReadsSchemesAsUrlparseDoes) {
  EXPECT_TRUE(Made({{"mlflow_tracking_uri", "HTTP://127.0.0.1:1"}}).ok());
  EXPECT_EQ(Message(Made({{"mlflow_tracking_uri", "localhost:5000"}})),
            "Tesseract only supports accessing MLflow server via HTTP/HTTPS (got URI scheme: localhost)");
  EXPECT_TRUE(Made({{"mlflow_tracking_uri", "http://h"},
                    {"mlflow_run_extra_args", R"({"run_name": None, "run_id": None, "tags": None})"}})
                  .ok());
  ::setenv("MLFLOW_RUN_ID", "abc", 1);
  const Status run_id = Made({{"mlflow_tracking_uri", "http://h"}});
  ::unsetenv("MLFLOW_RUN_ID");
  EXPECT_NE(Message(run_id).find("MLFLOW_RUN_ID is not supported"), std::string::npos) << Message(run_id);
}

TEST(MlflowRuns, RefusesWhatItCannotHonourNamingIt) {
  const Status scheme = Made({{"mlflow_tracking_uri", "ftp://host"}});
  EXPECT_EQ(Message(scheme),
            "Tesseract only supports accessing MLflow server via HTTP/HTTPS (got URI scheme: ftp)");
  const Status key = Made(
      {{"mlflow_tracking_uri", "http://h"}, {"mlflow_run_extra_args", R"({"log_system_metrics": True})"}});
  EXPECT_NE(Message(key).find("'log_system_metrics' is not supported"), std::string::npos) << Message(key);
  const Status literal = Made({{"mlflow_tracking_uri", "http://h"}, {"mlflow_run_extra_args", "[1, 2]"}});
  EXPECT_NE(Message(literal).find("TESSERACT_MLFLOW_RUN_EXTRA_ARGS is not a dict literal"),
            std::string::npos);
  ::setenv("MLFLOW_TRACKING_USERNAME", "someone", 1);
  const Status half = Made({{"mlflow_tracking_uri", "http://h"}});
  ::unsetenv("MLFLOW_TRACKING_USERNAME");
  EXPECT_NE(Message(half).find("both must be defined"), std::string::npos) << Message(half);
}

}  // namespace
}  // namespace tesscpp::client
