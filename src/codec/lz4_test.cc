#include "codec/lz4.h"

#include <gtest/gtest.h>

#include <random>

#include "core/status_matchers.h"
#include "support/test_files.h"

namespace tesscpp::codec {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::ReadFile;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

const char* const kGolden[] = {"empty", "text", "random_f32", "quantized_f64", "zeros"};

// Frames written by python-lz4's lz4.frame.compress decode to their inputs, and
// our encoder writes the very same bytes (same settings, same liblz4 version).
TEST(Lz4, InteroperatesWithPythonLz4) {
  for (const char* name : kGolden) {
    const std::string raw = ReadFile(DataPath(std::string("golden/lz4/") + name + ".raw"));
    const std::string frame = ReadFile(DataPath(std::string("golden/lz4/") + name + ".lz4"));
    ASSERT_FALSE(frame.empty()) << name;
    std::string out(raw.size(), '\0');
    ASSERT_TRUE(Lz4FrameDecompress(Bytes(frame), {reinterpret_cast<uint8_t*>(out.data()), out.size()}).ok())
        << name;
    EXPECT_TRUE(out == raw) << name;

    auto ours = Lz4FrameCompress(Bytes(raw));
    ASSERT_OK(ours);
    EXPECT_EQ(ours->string_view(), frame) << name;
  }
}

TEST(Lz4, RefusesTheWrongSize) {
  const std::string frame = ReadFile(DataPath("golden/lz4/text.lz4"));
  std::vector<uint8_t> small(100), large(20000);
  auto s = Lz4FrameDecompress(Bytes(frame), small);
  EXPECT_EQ(s.code(), StatusCode::kDecodeError);
  EXPECT_NE(s.message().find("holds 11700 bytes, expected 100"), std::string::npos) << s;
  EXPECT_FALSE(Lz4FrameDecompress(Bytes(frame), large).ok());
}

TEST(Lz4, RefusesGarbageAndTruncation) {
  const std::string frame = ReadFile(DataPath("golden/lz4/random_f32.lz4"));
  std::vector<uint8_t> out(80000);
  EXPECT_EQ(Lz4FrameDecompress(Bytes("not an lz4 frame"), out).code(), StatusCode::kDecodeError);
  EXPECT_EQ(Lz4FrameDecompress({}, out).code(), StatusCode::kDecodeError);
  for (size_t cut : {size_t{4}, size_t{10}, frame.size() / 2, frame.size() - 1}) {
    auto s = Lz4FrameDecompress(Bytes(frame.substr(0, cut)), out);
    EXPECT_EQ(s.code(), StatusCode::kDecodeError) << "cut at " << cut;
  }
}

// python-lz4 reads the first frame and ignores what follows; so do we.
TEST(Lz4, IgnoresBytesAfterTheFrameLikePythonLz4) {
  const std::string raw = ReadFile(DataPath("golden/lz4/text.raw"));
  const std::string frame = ReadFile(DataPath("golden/lz4/text.lz4"));
  std::vector<uint8_t> out(raw.size());
  EXPECT_TRUE(Lz4FrameDecompress(Bytes(frame + "junk"), out).ok());
  EXPECT_TRUE(Lz4FrameDecompress(Bytes(frame + frame), out).ok());
}

// Flipped bytes must never crash or overrun; without checksums some flips still
// decode (to other bytes), the rest are errors.
TEST(Lz4, CorruptFramesNeverCrash) {
  const std::string raw = ReadFile(DataPath("golden/lz4/quantized_f64.raw"));
  const std::string frame = ReadFile(DataPath("golden/lz4/quantized_f64.lz4"));
  std::mt19937 rng(7);
  std::vector<uint8_t> out(raw.size());
  int errors = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::string bad = frame;
    for (int k = 0; k < 1 + trial % 4; ++k) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    errors += !Lz4FrameDecompress(Bytes(bad), out).ok();
  }
  EXPECT_GT(errors, 0);
}

TEST(Lz4, RoundTripsLargeData) {
  std::vector<uint8_t> raw(3 << 20);
  std::mt19937 rng(1);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i % 251 == 0 ? rng() : i / 1000);
  auto frame = Lz4FrameCompress(raw);
  ASSERT_OK(frame);
  EXPECT_LT(frame->size(), static_cast<int64_t>(raw.size()));
  std::vector<uint8_t> out(raw.size());
  ASSERT_TRUE(Lz4FrameDecompress(frame->span(), out).ok());
  EXPECT_EQ(out, raw);
}

}  // namespace
}  // namespace tesscpp::codec
