// Tesseract::FromImage against a real engine. Not registered with CTest by
// itself: tests/containers/test_from_image.py builds the images, starts the
// engine and runs this binary with TESSCPP_TEST_IMAGE (vectoradd) and
// TESSCPP_TEST_COLLECTIONS_IMAGE set, so it never runs (or skips) without one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/status_matchers.h"
#include "support/test_tensors.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/platform/subprocess.h"

namespace tesscpp {
namespace {

namespace fs = std::filesystem;

std::string Required(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    ADD_FAILURE() << name << " is not set: run through tests/containers (make test)";
    std::exit(1);
  }
  return value;
}

using testing::Values;
using testing::Vector;

// Containers of any state whose name is `name`, as the engine lists them.
std::string ContainersNamed(const std::string& name) {
  auto listed = platform::RunChecked({"docker", "ps", "-aq", "--filter", "name=^" + name + "$"});
  EXPECT_OK(listed);
  return listed.ok() ? *listed : "?";
}

TEST(FromImage, AppliesInEveryOutputFormatAndLeavesNothingBehind) {
  const std::string image = Required("TESSCPP_TEST_IMAGE");
  const Value inputs = Value::Dict{{"a", Vector({1, 2, 3})}, {"b", Vector({4, 5, 6})}, {"s", 2.0}};
  for (const char* format : {"json", "json+base64", "json+binref"}) {
    SCOPED_TRACE(format);
    const fs::path output = fs::temp_directory_path() / ("tesscpp_fromimage_" + std::to_string(::getpid()));
    ImageOptions options;
    options.output_format = format;
    options.output_path = output.string();
    auto t = Tesseract::FromImage(image, options);
    ASSERT_OK(t);
    auto info = t->GetContainerInfo();
    ASSERT_OK(info);
    EXPECT_EQ(info->status, "running");
    EXPECT_EQ(info->image, image);
    EXPECT_EQ(info->url, t->url());
    EXPECT_EQ(info->url, "http://127.0.0.1:" + std::to_string(info->host_port));
    EXPECT_FALSE(ContainersNamed(info->name).empty());

    auto out = t->Apply(inputs, std::string("cpp"));
    ASSERT_OK(out);
    EXPECT_EQ(Values(out->as_dict().at("result")), (std::vector<double>{6, 9, 12}));
    EXPECT_TRUE(fs::is_directory(output / "run_cpp")) << "run directories land in the mounted output path";
    auto lz4 = t->WithEncoding({std::nullopt, std::nullopt, "lz4"});
    ASSERT_OK(lz4);
    auto compressed = lz4->Apply(inputs);
    ASSERT_OK(compressed);
    EXPECT_EQ(Values(compressed->as_dict().at("result")), (std::vector<double>{6, 9, 12}));

    ASSERT_OK(t->Teardown());
    EXPECT_EQ(ContainersNamed(info->name), "") << "teardown removes the container";
    EXPECT_STATUS(t->GetContainerInfo(), StatusCode::kInvalidArgument);
    auto logs = t->ServerLogs();
    ASSERT_OK(logs);
    EXPECT_NE(logs->find("serving vectoradd"), std::string::npos) << *logs;
    std::error_code ec;
    fs::remove_all(output, ec);
  }
}

TEST(FromImage, TheLastHandleRemovesTheContainer) {
  std::string name;
  {
    auto t = Tesseract::FromImage(Required("TESSCPP_TEST_IMAGE"));
    ASSERT_OK(t);
    name = t->GetContainerInfo()->name;
    EXPECT_FALSE(ContainersNamed(name).empty());
  }
  EXPECT_EQ(ContainersNamed(name), "");
}

TEST(FromImage, StreamsTheLogsOfARun) {
  std::vector<std::string> lines;
  ImageOptions options;
  options.client.stream_logs = [&](std::string_view line) { lines.emplace_back(line); };
  auto t = Tesseract::FromImage(Required("TESSCPP_TEST_COLLECTIONS_IMAGE"), options);
  ASSERT_OK(t);
  const Value inputs = Value::Dict{{"arrays", Value::List{Vector({1, 2}), Vector({3, 4})}},
                                   {"weights", Value::Dict{{"w1", Vector({0.5, 2})}}},
                                   {"scale", 3.0}};
  auto out = t->Apply(inputs);
  ASSERT_OK(out);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("collections: summing 2 arrays"), std::string::npos) << lines.front();
}

TEST(FromImage, MissingAndForeignImagesAreNamed) {
  auto missing = Tesseract::FromImage("tesscpp-no-such-image:1");
  EXPECT_STATUS(missing, StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no image 'tesscpp-no-such-image:1'"), std::string::npos);
  auto foreign = Tesseract::FromImage(Required("TESSCPP_TEST_FOREIGN_IMAGE"));
  EXPECT_STATUS(foreign, StatusCode::kInvalidArgument);
  EXPECT_NE(foreign.status().message().find("not a Tesseract image"), std::string::npos);
}

TEST(FromImage, AContainerThatExitsEarlyReportsItsLog) {
  ImageOptions options;
  options.environment = {{"TESSCPP_COMPONENT", "/no/such/libcomponent.so"}};
  auto t = Tesseract::FromImage(Required("TESSCPP_TEST_IMAGE"), options);
  ASSERT_FALSE(t.ok());
  EXPECT_STATUS(t, StatusCode::kUnavailable);
  EXPECT_NE(t.status().message().find("stopped before it was healthy"), std::string::npos);
  EXPECT_NE(t.status().message().find("/no/such/libcomponent.so"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace tesscpp
