#include "codec/base64.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "core/status_matchers.h"
#include "support/test_files.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp::codec {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::FromHex;
using tesscpp::testing::ReadFile;

std::vector<const Base64Codec*> Codecs() {
  std::vector<const Base64Codec*> codecs{&ScalarBase64()};
  if (Avx2Base64() != nullptr) codecs.push_back(Avx2Base64());
  return codecs;
}

std::string Encode(const Base64Codec& codec, std::span<const uint8_t> bytes) {
  std::string out(Base64EncodedSize(bytes.size()), '\0');
  codec.encode(bytes, out.data());
  return out;
}

// Decodes with length/padding checks, then the given codec.
Result<std::vector<uint8_t>> Decode(const Base64Codec& codec, std::string_view text) {
  TESS_ASSIGN_OR_RETURN(size_t n, Base64DecodedSize(text));
  std::vector<uint8_t> out(n);
  TESS_RETURN_IF_ERROR(codec.decode(text, out.data()));
  return out;
}

TEST(Base64, MatchesPybase64OnGoldenVectors) {
  std::istringstream lines(ReadFile(DataPath("golden/base64_vectors.txt")));
  std::string hex, encoded;
  int count = 0;
  while (lines >> hex >> encoded) {
    const std::vector<uint8_t> raw = FromHex(hex);
    if (encoded == "-") encoded.clear();
    for (const Base64Codec* codec : Codecs()) {
      EXPECT_EQ(Encode(*codec, raw), encoded) << codec->name << " n=" << raw.size();
      auto decoded = Decode(*codec, encoded);
      ASSERT_OK(decoded);
      EXPECT_EQ(*decoded, raw) << codec->name;
    }
    ++count;
  }
  EXPECT_GT(count, 70);
}

// pybase64.b64decode(validate=True) accepts exactly these strings.
TEST(Base64, StrictAcceptanceMatchesPybase64) {
  std::istringstream lines(ReadFile(DataPath("golden/base64_strict.txt")));
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const size_t split = line.rfind(line.back() == 'R' ? " ERR" : " OK ");
    const Value text = *ReadJson(line.substr(0, split));
    const bool ok = line.compare(split, 4, " OK ") == 0;
    for (const Base64Codec* codec : Codecs()) {
      auto decoded = Decode(*codec, text.as_string());
      EXPECT_EQ(decoded.ok(), ok) << codec->name << " " << line;
      if (ok && decoded.ok()) {
        EXPECT_EQ(*decoded, FromHex(line.substr(split + 4))) << line;
      }
      if (!decoded.ok()) {
        EXPECT_STATUS(decoded, StatusCode::kDecodeError);
      }
    }
    ++count;
  }
  EXPECT_GT(count, 40);
}

TEST(Base64, ErrorsNameTheOffset) {
  const std::string good(64, 'A');
  std::string bad = good;
  bad[37] = '%';
  for (const Base64Codec* codec : Codecs()) {
    auto r = Decode(*codec, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), "invalid base64 character '%' at offset 37") << codec->name;
  }
  std::string padded = good;
  padded[8] = '=';
  EXPECT_EQ(Decode(ScalarBase64(), padded).status().message(),
            "base64 padding '=' before the end, at offset 8");
  EXPECT_EQ(Decode(ScalarBase64(), "AAAAA").status().message(), "base64 length 5 is not a multiple of 4");
  EXPECT_EQ(Decode(ScalarBase64(), std::string("AAA\x01", 4)).status().message(),
            "invalid base64 character 0x01 at offset 3");
}

TEST(Base64, DecodeChecksTheDestinationSize) {
  uint8_t out[4];
  EXPECT_EQ(Base64Decode("QUJD", {out, 2}).message(), "base64 string decodes to 3 bytes, expected 2");
  EXPECT_TRUE(Base64Decode("QUJD", {out, 3}).ok());
}

// The AVX2 codec must agree with the scalar reference byte for byte, on every
// length and alignment, and report the same first error.
TEST(Base64, Avx2AgreesWithScalar) {
  if (Avx2Base64() == nullptr) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(2026);
  std::vector<uint8_t> storage(20000 + 64);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t n = trial < 300 ? static_cast<size_t>(trial) : rng() % 20000;
    const size_t align = rng() % 32;
    for (size_t i = 0; i < n; ++i) storage[align + i] = static_cast<uint8_t>(rng());
    std::span<const uint8_t> bytes(storage.data() + align, n);
    const std::string scalar = Encode(ScalarBase64(), bytes);
    ASSERT_EQ(Encode(*Avx2Base64(), bytes), scalar) << "n=" << n << " align=" << align;

    std::string text = scalar;
    if (trial % 3 == 0 && !text.empty()) {
      text[rng() % text.size()] = "%\n =-_\x80"[rng() % 7];  // corrupt one byte
    }
    auto a = Decode(ScalarBase64(), text);
    auto b = Decode(*Avx2Base64(), text);
    ASSERT_EQ(a.ok(), b.ok()) << "n=" << n;
    if (a.ok()) {
      ASSERT_EQ(*a, *b);
      ASSERT_TRUE(std::equal(a->begin(), a->end(), bytes.begin()));
    } else {
      ASSERT_EQ(a.status(), b.status());
    }
  }
}

TEST(Base64, ActiveCodecIsTheFastestAvailable) {
  const char* forced = std::getenv("TESSCPP_BASE64");
  if (forced != nullptr) GTEST_SKIP() << "TESSCPP_BASE64 is set";
  EXPECT_EQ(ActiveBase64().name, Avx2Base64() != nullptr ? "avx2" : "scalar");
}

}  // namespace
}  // namespace tesscpp::codec
