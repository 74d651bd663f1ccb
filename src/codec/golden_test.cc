// Golden vectors from the reference stack (tests/golden/generate.py): response
// bodies written by tesseract-core 1.15's own encoder in every output format.
// tesscpp must decode each body to exactly the values tesseract-core decodes,
// and encode those values back to the same bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "core/status_matchers.h"
#include "support/test_files.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::FromHex;
using tesscpp::testing::ReadFile;

struct Format {
  const char* name;
  ArrayEncoding encoding;
  Compression compression;
};

const Format kFormats[] = {
    {"json", ArrayEncoding::kJson, Compression::kNone},
    {"base64", ArrayEncoding::kBase64, Compression::kNone},
    {"base64_lz4", ArrayEncoding::kBase64, Compression::kLz4},
    {"binref", ArrayEncoding::kBinref, Compression::kNone},
    {"binref_lz4", ArrayEncoding::kBinref, Compression::kLz4},
};

std::string BinrefDir() { return DataPath("golden/docs/binref"); }

Value::Dict Expected(const Format& f) {
  Value expected = *ReadJson(ReadFile(DataPath(std::string("golden/docs/") + f.name + ".expected")));
  Value::Dict out;
  for (const auto& [field, spec] : expected.as_dict()) {
    std::vector<int64_t> dims;
    for (const Value& d : spec.as_dict().at("shape").as_list()) dims.push_back(d.as_int());
    Tensor t = *Tensor::Allocate(*DtypeFromName(spec.as_dict().at("dtype").as_string()), *Shape::Make(dims));
    const std::vector<uint8_t> bytes = FromHex(spec.as_dict().at("hex").as_string());
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), t.nbytes()) << field;
    std::copy(bytes.begin(), bytes.end(), t.data());
    out.set(field, Value(t));
  }
  return out;
}

class Golden : public ::testing::TestWithParam<Format> {};

TEST_P(Golden, DecodesLikeTesseractCore) {
  const Format& f = GetParam();
  const std::string body = ReadFile(DataPath(std::string("golden/docs/") + f.name + ".json"));
  ASSERT_FALSE(body.empty());
  const Value::Dict expected = Expected(f);
  ASSERT_GT(expected.size(), 50u);
  for (ArrayDetection detection : {ArrayDetection::kTagged, ArrayDetection::kShaped}) {
    JsonReadOptions read;
    read.arrays = detection;
    read.array_options.binref_dir = BinrefDir();
    auto decoded = ReadJson(body, read);
    ASSERT_OK(decoded);
    for (const auto& [field, want] : expected) {
      const Value* got = decoded->as_dict().find(field);
      ASSERT_NE(got, nullptr) << field;
      ASSERT_TRUE(got->is_tensor()) << field;
      EXPECT_TRUE(got->as_tensor().Equals(want.as_tensor())) << f.name << " " << field;
    }
  }
}

TEST_P(Golden, EncodesTheSameBytes) {
  const Format& f = GetParam();
  const std::string body = ReadFile(DataPath(std::string("golden/docs/") + f.name + ".json"));
  const std::string out_dir = ::testing::TempDir() + "/golden_binref_" + f.name;
  std::filesystem::remove_all(out_dir);
  BinrefWriter binref(out_dir);
  JsonWriteOptions write;
  write.arrays.encoding = f.encoding;
  write.arrays.compression = f.compression;
  write.arrays.binref = &binref;
  auto ours = WriteJson(Value(Expected(f)), write);
  ASSERT_OK(ours);
  if (f.encoding != ArrayEncoding::kBinref) {
    EXPECT_EQ(ours->string_view(), body);
    return;
  }
  // binref files are named by random uuids: compare with the names masked, and
  // compare the file contents.
  const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  EXPECT_EQ(std::regex_replace(std::string(ours->string_view()), uuid, "UUID"),
            std::regex_replace(body, uuid, "UUID"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(body, m, uuid));
  const std::string theirs_file = ReadFile(BinrefDir() + "/" + m.str() + ".bin");
  const std::string our_body(ours->string_view());
  ASSERT_TRUE(std::regex_search(our_body, m, uuid));
  EXPECT_EQ(ReadFile(out_dir + "/" + m.str() + ".bin"), theirs_file);
  std::filesystem::remove_all(out_dir);
}

INSTANTIATE_TEST_SUITE_P(Formats, Golden, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<Format>& param) {
                           return std::string(param.param.name);
                         });

}  // namespace
}  // namespace tesscpp
