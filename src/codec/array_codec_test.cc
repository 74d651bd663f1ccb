#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "core/status_matchers.h"
#include "tesscpp/internal/codec/array_options.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const fs::path& parent = fs::temp_directory_path()) {
    std::string pattern = (parent / "tesscpp-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Tensor RandomTensor(Dtype dtype, std::vector<int64_t> dims, uint32_t seed) {
  Tensor t = *Tensor::Allocate(dtype, *Shape::Make(std::move(dims)));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<uint8_t>(rng());
  if (dtype == Dtype::kBool) {
    for (int64_t i = 0; i < t.nbytes(); ++i) t.data()[i] &= 1;
  }
  return t;
}

// Finite random floats whose json spelling round-trips (random bit patterns may
// hold NaN payloads, which json cannot carry).
Tensor JsonSafeTensor(Dtype dtype, std::vector<int64_t> dims, uint32_t seed) {
  Tensor t = RandomTensor(dtype, std::move(dims), seed);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1000);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (dtype) {
      case Dtype::kFloat16: t.data_as<uint16_t>()[i] = 0x3c00 + static_cast<uint16_t>(rng() % 0x2000); break;
      case Dtype::kFloat32: t.data_as<float>()[i] = static_cast<float>(normal(rng)); break;
      case Dtype::kFloat64: t.data_as<double>()[i] = normal(rng); break;
      case Dtype::kComplex64:
        t.data_as<std::complex<float>>()[i] = {static_cast<float>(normal(rng)),
                                               static_cast<float>(normal(rng))};
        break;
      case Dtype::kComplex128: t.data_as<std::complex<double>>()[i] = {normal(rng), normal(rng)}; break;
      default: break;
    }
  }
  return t;
}

Result<Value> RoundTrip(const Value& v, const ArrayEncodeOptions& enc, const std::string& binref_dir,
                        ArrayDetection detection = ArrayDetection::kShaped) {
  JsonWriteOptions write;
  write.arrays = enc;
  TESS_ASSIGN_OR_RETURN(Buffer doc, WriteJson(v, write));
  JsonReadOptions read;
  read.arrays = detection;
  read.array_options.binref_dir = binref_dir;
  return ReadJson(doc, read);
}

Result<Tensor> DecodeText(std::string_view arraydict_json, const std::string& binref_dir = "") {
  TESS_ASSIGN_OR_RETURN(Value v, ReadJson(arraydict_json));
  ArrayDecodeOptions options;
  options.binref_dir = binref_dir;
  return DecodeArray(v, options);
}

void ExpectError(std::string_view arraydict_json, StatusCode code, std::string_view fragment,
                 const std::string& binref_dir = "") {
  auto r = DecodeText(arraydict_json, binref_dir);
  ASSERT_FALSE(r.ok()) << arraydict_json;
  EXPECT_EQ(r.status().code(), code) << r.status();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status();
  // The streaming reader reports the same problem, under the array's path.
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  read.array_options.binref_dir = binref_dir;
  auto streamed = ReadJson("{\"x\": " + std::string(arraydict_json) + "}", read);
  ASSERT_FALSE(streamed.ok());
  EXPECT_EQ(streamed.status().code(), code) << streamed.status();
  EXPECT_NE(streamed.status().message().find(fragment), std::string::npos) << streamed.status();
  EXPECT_EQ(streamed.status().message().rfind('x', 0), 0u) << streamed.status();  // the array's path
  // ... and carries a pydantic-shaped issue located at the array.
  const ValidationDetail* detail = GetValidationDetail(streamed.status());
  ASSERT_NE(detail, nullptr) << streamed.status();
  ASSERT_EQ(detail->issues().size(), 1u);
  EXPECT_EQ(detail->issues()[0].loc, (std::vector<Value>{Value("x")}));
}

// The issue types the reference reports for the same bad arraydicts (see
// tests/data/golden/runtime/vectoradd.cases.json for the recorded originals).
std::string IssueType(std::string_view arraydict_json) {
  auto r = DecodeText(arraydict_json, ::testing::TempDir());
  if (r.ok()) return "ok";
  const ValidationDetail* detail = GetValidationDetail(r.status());
  return detail == nullptr ? "untyped: " + r.status().ToString() : detail->issues()[0].type;
}

TEST(ArrayCodec, IssueTypesMatchTheReference) {
  EXPECT_EQ(IssueType(R"({"shape":[3],"dtype":"float64","data":{"buffer":"AAAA","encoding":"base64"}})"),
            "array_decode_error");
  EXPECT_EQ(IssueType(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AA%A","encoding":"base64"}})"),
            "array_decode_error");
  EXPECT_EQ(IssueType(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAA","encoding":"base65"}})"),
            "array_non_numeric");
  EXPECT_EQ(IssueType(R"({"shape":[1],"dtype":"float8","data":{"buffer":"AAAA","encoding":"base64"}})"),
            "array_non_numeric");
  EXPECT_EQ(IssueType(R"({"shape":[2],"dtype":"int64","data":{"buffer":[1.5,2],"encoding":"json"}})"),
            "array_expected_integer");
  EXPECT_EQ(IssueType(R"({"shape":[2],"dtype":"int8","data":{"buffer":[1,300],"encoding":"json"}})"),
            "array_value_out_of_range");
  EXPECT_EQ(IssueType(R"({"shape":[3],"dtype":"float64","data":{"buffer":[[1,2],[3]],"encoding":"json"}})"),
            "array_decode_error");
  EXPECT_EQ(IssueType(R"({"shape":[1],"dtype":"float64","data":{"buffer":["a"],"encoding":"json"}})"),
            "array_decode_error");
  EXPECT_EQ(IssueType(R"({"shape":[1],"dtype":"float32","data":{"buffer":"nope.bin","encoding":"binref"}})"),
            "array_decode_error");
}

TEST(ArrayCodec, EveryDtypeEncodingAndCompressionRoundTrips) {
  TempDir dir;
  for (Dtype dtype : kAllDtypes) {
    for (ArrayEncoding encoding : {ArrayEncoding::kJson, ArrayEncoding::kBase64, ArrayEncoding::kBinref}) {
      for (Compression compression : {Compression::kNone, Compression::kLz4}) {
        for (const std::vector<int64_t>& dims :
             std::vector<std::vector<int64_t>>{{}, {0}, {7}, {3, 4}, {2, 0, 3}}) {
          const Tensor t = encoding == ArrayEncoding::kJson ? JsonSafeTensor(dtype, dims, 11)
                                                            : RandomTensor(dtype, dims, 11);
          BinrefWriter binref(dir.path());
          ArrayEncodeOptions enc;
          enc.encoding = encoding;
          enc.compression = compression;
          enc.binref = &binref;
          auto back = RoundTrip(Value::Dict{{"t", t}}, enc, dir.path());
          ASSERT_OK(back) << DtypeName(dtype) << " " << ArrayEncodingName(encoding) << ": " << back.status();
          const Value& got = back->as_dict().at("t");
          ASSERT_TRUE(got.is_tensor()) << DtypeName(dtype) << " " << ArrayEncodingName(encoding);
          EXPECT_TRUE(got.as_tensor().Equals(t))
              << DtypeName(dtype) << " " << ArrayEncodingName(encoding) << " rank " << dims.size();
        }
      }
    }
  }
}

TEST(ArrayCodec, WritesTheReferenceLayout) {
  Tensor t = *Tensor::Allocate(Dtype::kFloat64, *Shape::Make({3}));
  t.data_as<double>()[0] = 5;
  t.data_as<double>()[1] = 7;
  t.data_as<double>()[2] = 9;
  JsonWriteOptions opts;
  opts.arrays.encoding = ArrayEncoding::kBase64;
  EXPECT_EQ(WriteJson(Value(t), opts)->string_view(),
            R"({"object_type":"array","shape":[3],"dtype":"float64",)"
            R"("data":{"buffer":"AAAAAAAAFEAAAAAAAAAcQAAAAAAAACJA","encoding":"base64"}})");
  opts.arrays.object_type = false;  // the SDK's request form
  EXPECT_EQ(WriteJson(Value(t), opts)->string_view().substr(0, 10), R"({"shape":[)");
  opts.arrays.encoding = ArrayEncoding::kJson;
  opts.arrays.compression = Compression::kLz4;  // ignored for json, as the reference does
  EXPECT_EQ(WriteJson(Value(t), opts)->string_view(),
            R"({"shape":[3],"dtype":"float64","data":{"buffer":[5.0,7.0,9.0],"encoding":"json"}})");
}

TEST(ArrayCodec, JsonDecodingFollowsNumpy) {
  // Nested lists reshape like np.asarray(buffer).reshape(shape).
  Tensor t = *DecodeText(R"({"shape":[2,2],"dtype":"int32","data":{"buffer":[1,2,3,4],"encoding":"json"}})");
  EXPECT_EQ(t.data_as<int32_t>()[3], 4);
  t = *DecodeText(R"({"shape":[],"dtype":"float32","data":{"buffer":2.5,"encoding":"json"}})");
  EXPECT_EQ(t.data_as<float>()[0], 2.5f);
  // Integral floats become integers; bools become 0/1; null becomes NaN for floats.
  t = *DecodeText(R"({"shape":[3],"dtype":"uint8","data":{"buffer":[1.0,true,255],"encoding":"json"}})");
  EXPECT_EQ(t.data_as<uint8_t>()[0], 1);
  EXPECT_EQ(t.data_as<uint8_t>()[2], 255);
  t = *DecodeText(R"({"shape":[2],"dtype":"float64","data":{"buffer":[null,1],"encoding":"json"}})");
  EXPECT_TRUE(std::isnan(t.data_as<double>()[0]));
  t = *DecodeText(R"({"shape":[2],"dtype":"bool","data":{"buffer":[2,0],"encoding":"json"}})");
  EXPECT_EQ(t.data()[0], 1);
  t = *DecodeText(R"({"shape":[2],"dtype":"complex128","data":{"buffer":["1+2j",3],"encoding":"json"}})");
  EXPECT_EQ(t.data_as<std::complex<double>>()[0], std::complex<double>(1, 2));
  EXPECT_EQ(t.data_as<std::complex<double>>()[1], std::complex<double>(3, 0));
  t = *DecodeText(
      R"({"shape":[1],"dtype":"uint64","data":{"buffer":[18446744073709551615],"encoding":"json"}})");
  EXPECT_EQ(t.data_as<uint64_t>()[0], 18446744073709551615u);
  // "raw" is refused by default, and accepted where the SDK accepts it.
  const Value raw = *ReadJson(R"({"shape":[1],"dtype":"float64","data":{"buffer":[1],"encoding":"raw"}})");
  EXPECT_FALSE(DecodeArray(raw).ok());
  ArrayDecodeOptions raw_ok;
  raw_ok.accept_raw = true;
  EXPECT_TRUE(DecodeArray(raw, raw_ok).ok());
}

TEST(ArrayCodec, BadJsonBuffers) {
  ExpectError(R"({"shape":[2],"dtype":"int8","data":{"buffer":[1.5,2],"encoding":"json"}})",
              StatusCode::kValidationError,
              "Expected integer data, but array contains floating point values");
  ExpectError(R"({"shape":[2],"dtype":"int8","data":{"buffer":[1,300],"encoding":"json"}})",
              StatusCode::kValidationError, "Array values do not fit into dtype 'int8' (e.g. 300)");
  ExpectError(R"({"shape":[2],"dtype":"uint16","data":{"buffer":[-1,3],"encoding":"json"}})",
              StatusCode::kValidationError, "do not fit into dtype 'uint16' (e.g. -1)");
  ExpectError(R"({"shape":[1],"dtype":"float16","data":{"buffer":[1e6],"encoding":"json"}})",
              StatusCode::kValidationError, "do not fit into dtype 'float16'");
  ExpectError(R"({"shape":[3],"dtype":"float64","data":{"buffer":[[1,2],[3]],"encoding":"json"}})",
              StatusCode::kDecodeError, "inhomogeneous shape after 1 dimensions");
  ExpectError(R"({"shape":[3],"dtype":"float64","data":{"buffer":[1,2],"encoding":"json"}})",
              StatusCode::kDecodeError, "cannot reshape array of size 2 into shape (3,)");
  ExpectError(R"({"shape":[1],"dtype":"float64","data":{"buffer":["a"],"encoding":"json"}})",
              StatusCode::kValidationError, "could not parse value as a numeric array");
  ExpectError(R"({"shape":[1],"dtype":"int32","data":{"buffer":[null],"encoding":"json"}})",
              StatusCode::kValidationError, "null cannot be converted to int32");
  ExpectError(R"({"shape":[1],"dtype":"float64","data":{"buffer":[{"a":1}],"encoding":"json"}})",
              StatusCode::kValidationError, "could not parse value as a numeric array");
  ExpectError(
      R"({"shape":[1],"dtype":"float64","data":{"buffer":[1],"encoding":"json","compression":"lz4"}})",
      StatusCode::kValidationError, "json arrays cannot be compressed");
}

TEST(ArrayCodec, BadFields) {
  ExpectError(R"({"shape":[1],"dtype":"float8","data":{"buffer":"AAAA","encoding":"base64"}})",
              StatusCode::kValidationError, "dtype: dtype 'float8' is not one of");
  // Unknown encodings: an error for DecodeArray; for the streaming reader the
  // object is not an arraydict at all (see ArrayDetection.LookAlikesStayDicts).
  EXPECT_EQ(DecodeText(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AA==","encoding":"base65"}})")
                .status()
                .message(),
            "data.encoding: unknown array encoding 'base65' (expected 'json', 'base64' or 'binref')");
  ExpectError(R"({"shape":[-1],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64"}})",
              StatusCode::kValidationError, "shape: shape dimension -1 is negative");
  ExpectError(R"({"shape":"3","dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64"}})",
              StatusCode::kValidationError, "shape: expected a list of integers");
  // 2^59 complex128 elements are 2^63 bytes: refused before any byte count
  // is formed (one past int64; UBSan's signed-overflow report before).
  ExpectError(
      R"({"shape":[576460752303423488],"dtype":"complex128","data":{"buffer":"AAAA","encoding":"base64"}})",
      StatusCode::kOutOfRange, "shape: shape (576460752303423488,) has 2^59 elements or more");
  ExpectError(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64","x":1}})",
              StatusCode::kValidationError, "data.x: extra fields are not permitted");
  ExpectError(
      R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64","compression":"zstd"}})",
      StatusCode::kValidationError, "unknown compression 'zstd'");
  ExpectError(R"({"shape":[1],"dtype":"float32","data":{"buffer":7,"encoding":"base64"}})",
              StatusCode::kValidationError, "data.buffer: a base64 buffer must be a string");
  auto missing = DecodeText(R"({"shape":[1],"dtype":"float32"})");
  EXPECT_EQ(missing.status().message(), "data: field required");
  auto extra =
      DecodeText(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64"},"z":0})");
  EXPECT_EQ(extra.status().message(), "z: extra fields are not permitted");
}

TEST(ArrayCodec, BadBase64Buffers) {
  ExpectError(R"({"shape":[2],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64"}})",
              StatusCode::kDecodeError, "buffer holds 4 bytes, but a float32 array of shape (2,) needs 8");
  ExpectError(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAA%AA==","encoding":"base64"}})",
              StatusCode::kDecodeError, "data.buffer: invalid base64 character '%' at offset 3");
  ExpectError(R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAAAA=","encoding":"base64"}})",
              StatusCode::kDecodeError, "not a multiple of 4");
  ExpectError(
      R"({"shape":[1],"dtype":"float32","data":{"buffer":"AAAAAA==","encoding":"base64","compression":"lz4"}})",
      StatusCode::kDecodeError, "lz4");
}

TEST(ArrayCodec, EscapedBase64IsUnescapedLikePython) {
  // JSON lets a peer escape any character; Python's json decoder unescapes first.
  Tensor t = *DecodeText(
      R"({"shape":[1],"dtype":"float32","data":{"buffer":"AACAPw\u003d\u003d","encoding":"base64"}})");
  EXPECT_EQ(t.data_as<float>()[0], 1.0f);
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  auto v = ReadJson(
      R"({"x":{"shape":[1],"dtype":"float32","data":{"buffer":"AACAPw\u003d\u003d","encoding":"base64"}}})",
      read);
  ASSERT_OK(v);
  EXPECT_EQ(v->as_dict().at("x").as_tensor().data_as<float>()[0], 1.0f);
}

class BinrefTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(fs::path(base_.path()) / "in");
    fs::create_directories(fs::path(base_.path()) / "secret");
    std::ofstream(fs::path(base_.path()) / "in" / "ok.bin", std::ios::binary).write("\0\0\x80?\0\0\0@", 8);
    std::ofstream(fs::path(base_.path()) / "secret" / "key.bin", std::ios::binary).write("\0\0\x80?", 4);
    fs::create_symlink(fs::path(base_.path()) / "secret" / "key.bin",
                       fs::path(base_.path()) / "in" / "link.bin");
  }
  std::string in() const { return base_.path() + "/in"; }
  static std::string Doc(const std::string& spec, const std::string& extra = "") {
    return R"({"shape":[1],"dtype":"float32","data":{"buffer":")" + spec + R"(","encoding":"binref")" +
           extra + "}}";
  }
  TempDir base_;
};

TEST_F(BinrefTest, ReadsOffsetsInsideTheDirectory) {
  EXPECT_EQ(DecodeText(Doc("ok.bin"), in())->data_as<float>()[0], 1.0f);
  EXPECT_EQ(DecodeText(Doc("ok.bin:4"), in())->data_as<float>()[0], 2.0f);
  EXPECT_EQ(DecodeText(Doc("./ok.bin:0"), in())->data_as<float>()[0], 1.0f);
}

TEST_F(BinrefTest, RefusesPathsThatEscape) {
  ExpectError(Doc("../secret/key.bin"), StatusCode::kInvalidArgument, "escapes the binref directory", in());
  ExpectError(Doc("link.bin"), StatusCode::kInvalidArgument, "escapes the binref directory", in());
  ExpectError(Doc(base_.path() + "/secret/key.bin"), StatusCode::kInvalidArgument, "is absolute", in());
  ExpectError(Doc("s3://bucket/key.bin"), StatusCode::kInvalidArgument, "is a URL", in());
  ExpectError(Doc("ok.bin"), StatusCode::kInvalidArgument, "no binref directory is set", "");
}

TEST_F(BinrefTest, RefusesMissingFilesAndRanges) {
  ExpectError(Doc("nope.bin"), StatusCode::kNotFound, "does not exist", in());
  ExpectError(Doc("ok.bin:6"), StatusCode::kDecodeError, "out of range", in());
  ExpectError(Doc("ok.bin:99999999999999999999"), StatusCode::kValidationError, "out of range", in());
  ExpectError(Doc("ok.bin:0", R"(,"compression":"lz4")"), StatusCode::kValidationError,
              "names no compressed size", in());
  ExpectError(Doc("ok.bin:0:8", R"(,"compression":"lz4")"), StatusCode::kDecodeError, "lz4", in());
}

TEST_F(BinrefTest, WriterFollowsTheReferenceLayout) {
  BinrefWriter writer(base_.path(), "run_1", /*max_file_size=*/10);
  const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string a = *writer.Append(bytes);
  std::string b = *writer.Append(bytes);  // 8 <= 10: same file
  std::string c = *writer.Append(bytes);  // 16 > 10: a new file
  EXPECT_EQ(a.substr(0, 6), "run_1/");
  EXPECT_EQ(a.size(), std::string("run_1/").size() + 36 + 4 + 2);  // uuid4 + ".bin" + ":0"
  EXPECT_EQ(a.substr(0, a.size() - 2) + ":8", b);
  EXPECT_NE(a.substr(0, a.size() - 2), c.substr(0, c.size() - 2));
  EXPECT_EQ(c.substr(c.size() - 2), ":0");
  EXPECT_EQ(fs::file_size(fs::path(base_.path()) / a.substr(0, a.size() - 2)), 16u);
}

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// A file starting with a large array may be a prepared one, renamed into
// place and cut to what it holds; on disk and on tmpfs alike.
TEST(BinrefWriterFiles, TakesPreparedFilesForLargeArrays) {
  std::vector<fs::path> parents{fs::temp_directory_path()};
  if (fs::is_directory("/dev/shm")) parents.emplace_back("/dev/shm");
  for (const fs::path& parent : parents) {
    SCOPED_TRACE(parent.string());
    TempDir base(parent);
    const int64_t large = BinrefWriter::kLargeArray * 2;
    const std::string spare = base.path() + "/spare.bin";
    std::ofstream(spare, std::ios::binary) << std::string(large + 4096, 'x');  // bigger, other bytes
    std::vector<int64_t> asked;
    auto source = [&asked, &spare](int64_t size) -> std::optional<std::string> {
      asked.push_back(size);
      return asked.size() == 1 ? std::optional(spare) : std::nullopt;
    };
    const Tensor big = RandomTensor(Dtype::kUInt8, {large}, 7);
    const std::string big_bytes(reinterpret_cast<const char*>(big.data()), static_cast<size_t>(large));
    const uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    BinrefWriter first(base.path(), "run_1");
    first.set_file_source(source);
    const std::string a = *first.Append(big.bytes());
    const std::string b = *first.Append(small);
    const std::string name = a.substr(0, a.rfind(':'));
    EXPECT_EQ(a, name + ":0");
    EXPECT_EQ(b, name + ":" + std::to_string(large));
    EXPECT_EQ(asked, std::vector<int64_t>{large});
    EXPECT_FALSE(fs::exists(spare));
    EXPECT_EQ(FileBytes(fs::path(base.path()) / name), big_bytes + std::string(small, small + 8));

    // Nothing prepared: a new file, the same bytes.
    BinrefWriter second(base.path(), "run_2");
    second.set_file_source(source);
    const std::string c = *second.Append(big.bytes());
    EXPECT_EQ(asked.size(), 2u);
    EXPECT_EQ(FileBytes(fs::path(base.path()) / c.substr(0, c.rfind(':'))), big_bytes);

    // A file that starts with a small array is never prepared.
    BinrefWriter third(base.path(), "run_3");
    third.set_file_source(source);
    ASSERT_TRUE(third.Append(small).ok());
    ASSERT_TRUE(third.Append(big.bytes()).ok());
    EXPECT_EQ(asked.size(), 2u);
    EXPECT_EQ(third.files().size(), 1u);
    EXPECT_EQ(FileBytes(third.files()[0]), std::string(small, small + 8) + big_bytes);
  }
}

TEST(ArrayDetection, TaggedOnlyTakesTaggedObjects) {
  const std::string untagged = R"({"shape":[1],"dtype":"float64","data":{"buffer":[1.5],"encoding":"json"}})";
  const std::string tagged =
      R"({"object_type":"array","shape":[1],"dtype":"float64","data":{"buffer":[1.5],"encoding":"json"}})";
  JsonReadOptions read;
  read.arrays = ArrayDetection::kTagged;
  EXPECT_TRUE(ReadJson(untagged, read)->is_dict());
  EXPECT_TRUE(ReadJson(tagged, read)->is_tensor());
  read.arrays = ArrayDetection::kShaped;
  EXPECT_TRUE(ReadJson(untagged, read)->is_tensor());
  read.arrays = ArrayDetection::kNone;
  EXPECT_TRUE(ReadJson(tagged, read)->is_dict());
}

TEST(ArrayDetection, LookAlikesStayDicts) {
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  // Other keys, or no known encoding: a user's dict, kept as it was (strings unescaped).
  Value v =
      *ReadJson(R"({"shape":1,"dtype":"x","data":{"buffer":"a\"b","encoding":"letters"},"more":0})", read);
  ASSERT_TRUE(v.is_dict());
  EXPECT_EQ(v.as_dict().at("data").as_dict().at("buffer").as_string(), "a\"b");
  EXPECT_EQ(v.as_dict().at("data").as_dict().begin()->first, "buffer");
  v = *ReadJson(R"({"data":{"encoding":"nothing","buffer":"x"},"shape":[1],"dtype":"float64"})", read);
  EXPECT_TRUE(v.is_dict());
}

}  // namespace
}  // namespace tesscpp
