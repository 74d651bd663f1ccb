// The reference runtime's recorded answers (tests/golden/generate_runtime.py,
// tesseract-core 1.15.0 serving the Python fixtures) replayed through our
// Runtime serving the C++ examples: same status, content type and body —
// arrays by value and dtype, maps without key order, 422 issues by type, loc,
// ctx and (where ours is not documented to differ) message.
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/status_matchers.h"
#include "support/test_files.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/loader/component_library.h"

namespace tesscpp {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::ReadFile;

std::filesystem::path TempDir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tesscpp_runtime_test_" + name + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::unique_ptr<Runtime> Serve(const std::string& example, RuntimeConfig config = {}) {
  auto library = ComponentLibrary::Open(std::string(TESS_EXAMPLES_DIR) + "/lib" + example + ".so");
  EXPECT_OK(library);
  if (!library.ok()) return nullptr;
  config.name = example;
  config.version = "unknown";
  config.output_path = TempDir(example).string();
  std::shared_ptr<const Component> component(*library, &(*library)->component());
  auto runtime = cpp_kind::MakeRuntime(component, config);
  EXPECT_OK(runtime);
  return runtime.ok() ? *std::move(runtime) : nullptr;
}

RuntimeResponse Post(const Runtime& runtime, const std::string& path, const std::string& body,
                     std::optional<std::string> accept = std::nullopt) {
  RuntimeRequest request;
  request.method = "POST";
  request.target = path;
  request.accept = std::move(accept);
  request.content_type = "application/json";
  request.body = Buffer::FromString(body);
  return runtime.Handle(request);
}

Value Parse(std::string_view text) {
  JsonReadOptions read;
  read.arrays = ArrayDetection::kTagged;
  auto v = ReadJson(text, read);
  EXPECT_OK(v) << v.status() << " in " << text;
  return v.ok() ? *v : Value();
}

// Equal as the protocol means it: dicts as maps, tensors by dtype, shape and bits.
::testing::AssertionResult SameJson(const Value& got, const Value& want, const std::string& where) {
  if (got.kind() != want.kind()) {
    // 1 and 1.0 are the same JSON number to every client.
    if (got.is_number() && want.is_number() && got.as_number() == want.as_number()) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << where << ": kind " << Value::KindName(got.kind()) << " vs " << Value::KindName(want.kind());
  }
  if (got.is_dict()) {
    if (got.as_dict().size() != want.as_dict().size()) {
      return ::testing::AssertionFailure()
             << where << ": " << got.as_dict().size() << " vs " << want.as_dict().size() << " keys";
    }
    for (const auto& [key, value] : want.as_dict()) {
      const Value* other = got.as_dict().find(key);
      if (other == nullptr) return ::testing::AssertionFailure() << where << ": missing key " << key;
      std::string inner = where;
      inner += '.';
      inner += key;
      auto r = SameJson(*other, value, inner);
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (got.is_list()) {
    if (got.as_list().size() != want.as_list().size()) {
      return ::testing::AssertionFailure() << where << ": list lengths differ";
    }
    for (size_t i = 0; i < got.as_list().size(); ++i) {
      auto r = SameJson(got.as_list()[i], want.as_list()[i], where + "[" + std::to_string(i) + "]");
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (got.is_tensor()) {
    if (got.as_tensor().Equals(want.as_tensor())) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << where << ": arrays differ (" << DtypeName(got.as_tensor().dtype())
           << got.as_tensor().shape().ToString() << " vs " << DtypeName(want.as_tensor().dtype())
           << want.as_tensor().shape().ToString() << ")";
  }
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << where << ": values differ";
}

// Messages whose text is ours (docs/compatibility.md, "Wire protocol and server"): decode errors
// name our decoder's problem; value errors that quote pydantic internals or
// end with the shape NumPy detected in a ragged list.
bool MessageIsOurs(const std::string& type, const std::string& msg) {
  return type == "array_decode_error" ||
         (type == "value_error" && (msg.find("validation error for") != std::string::npos ||
                                    msg.find("inhomogeneous shape") != std::string::npos));
}

void Replay(const std::string& fixture) {
  auto runtime = Serve(fixture);
  ASSERT_NE(runtime, nullptr);
  const Value cases = *ReadJson(ReadFile(DataPath("golden/runtime/" + fixture + ".cases.json")));
  int replayed = 0;
  for (const Value& c : cases.as_list()) {
    const auto& rec = c.as_dict();
    const std::string name = rec.at("name").as_string() + " (" + rec.at("path").as_string() + ", " +
                             (rec.at("accept").is_string() ? rec.at("accept").as_string() : "-") + ")";
    const std::string body(WriteJson(rec.at("body"))->string_view());
    std::optional<std::string> accept;
    if (rec.at("accept").is_string()) accept = rec.at("accept").as_string();
    const RuntimeResponse got = Post(*runtime, rec.at("path").as_string(), body, accept);
    const int64_t status = rec.at("status").as_int();
    ++replayed;
    ASSERT_EQ(got.status, status) << fixture << "/" << name << ": " << got.body.string_view();
    if (status == 500) continue;  // the reference's Python failed; the body is a traceback
    EXPECT_EQ(got.content_type, rec.at("content_type").as_string()) << fixture << "/" << name;
    const Value got_body = Parse(got.body.string_view());
    const Value& want = rec.at("response");
    if (status != 422) {
      // Re-read the recorded body the same way, so arrays become tensors.
      std::string where = fixture;
      where += '/';
      where += name;
      EXPECT_TRUE(SameJson(got_body, Parse(WriteJson(want)->string_view()), where));
      continue;
    }
    const auto& got_items = got_body.as_dict().at("detail").as_list();
    const auto& want_items = want.as_dict().at("detail").as_list();
    ASSERT_EQ(got_items.size(), want_items.size())
        << fixture << "/" << name << ": " << got.body.string_view();
    for (size_t i = 0; i < want_items.size(); ++i) {
      const auto& g = got_items[i].as_dict();
      const auto& w = want_items[i].as_dict();
      const std::string& type = w.at("type").as_string();
      EXPECT_EQ(g.at("type"), w.at("type")) << fixture << "/" << name;
      EXPECT_EQ(g.at("loc"), w.at("loc")) << fixture << "/" << name;
      if (!MessageIsOurs(type, w.at("msg").as_string())) {
        EXPECT_EQ(g.at("msg").as_string(), w.at("msg").as_string()) << fixture << "/" << name;
        if (const Value* ctx = w.find("ctx")) {
          ASSERT_NE(g.find("ctx"), nullptr) << fixture << "/" << name;
          EXPECT_EQ(g.at("ctx"), *ctx) << fixture << "/" << name;
        }
      }
    }
  }
  EXPECT_GE(replayed, 10) << fixture;
}

TEST(RuntimeReplay, Vectoradd) { Replay("vectoradd"); }
TEST(RuntimeReplay, Univariate) { Replay("univariate"); }
TEST(RuntimeReplay, Meshstats) { Replay("meshstats"); }
TEST(RuntimeReplay, Noop) { Replay("noop"); }

TEST(Runtime, RoutesLikeFastApi) {
  auto runtime = Serve("vectoradd");
  ASSERT_NE(runtime, nullptr);
  RuntimeRequest get{"GET", "/health", std::nullopt, std::nullopt, Buffer()};
  EXPECT_EQ(runtime->Handle(get).body.string_view(), R"({"status":"ok"})");
  get.target = "/nothing";
  EXPECT_EQ(runtime->Handle(get).status, 404);
  get.target = "/abstract_eval";  // vectoradd defines no abstract_eval
  EXPECT_EQ(runtime->Handle(get).status, 404);
  get.target = "/test";  // debug off
  EXPECT_EQ(runtime->Handle(get).status, 404);
  RuntimeRequest post{"POST", "/health", std::nullopt, std::nullopt, Buffer()};
  RuntimeResponse r = runtime->Handle(post);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.body.string_view(), R"({"detail":"Method Not Allowed"})");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].second, "GET");
  get.target = "/apply";
  EXPECT_EQ(runtime->Handle(get).headers[0].second, "POST");
}

TEST(Runtime, BadBodiesAre422) {
  auto runtime = Serve("vectoradd");
  ASSERT_NE(runtime, nullptr);
  RuntimeResponse r = Post(*runtime, "/apply", "");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body.string_view(),
            R"({"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]})");
  r = Post(*runtime, "/apply", "{not json");
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.string_view().find("json_invalid"), std::string_view::npos);
  r = Post(*runtime, "/apply", R"({"inputs":{"a":[1],"b":[2]},"what":1})");
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.string_view().find(R"("type":"extra_forbidden","loc":["body","what"])"),
            std::string_view::npos);
  r = Post(*runtime, "/apply?run_id=../escape", R"({"inputs":{"a":[1],"b":[2]}})");
  EXPECT_EQ(r.status, 422);
}

TEST(Runtime, NegotiatesAndNamesTheFormatProduced) {
  auto runtime = Serve("vectoradd");
  ASSERT_NE(runtime, nullptr);
  const std::string body = R"({"inputs":{"a":[1,2,3],"b":[4,5,6]}})";
  EXPECT_EQ(Post(*runtime, "/apply", body).content_type, "application/json");
  EXPECT_EQ(Post(*runtime, "/apply", body, "application/json, text/plain, */*").content_type,
            "application/json");
  EXPECT_EQ(
      Post(*runtime, "/apply", body, "application/msgpack;q=1, application/json+base64;q=0.5").content_type,
      "application/json+base64");
  RuntimeResponse r =
      Post(*runtime, "/apply", body, "application/json+base64; gpu_transport=none; compression=lz4");
  EXPECT_NE(r.body.string_view().find(R"("compression":"lz4")"), std::string_view::npos);
  r = Post(*runtime, "/apply", body, "application/json+base64; gpu_transport=cuda_ipc");
  EXPECT_EQ(r.status, 406);
  r = Post(*runtime, "/apply", body, "application/json+nonsense");
  EXPECT_EQ(r.status, 406);
  EXPECT_EQ(r.body.string_view(),
            R"({"detail":{"message":"Cannot produce any encoding accepted by 'application/json+nonsense'",)"
            R"("available_formats":["json","json+base64","json+binref"],"available_gpu_transports":["none"],)"
            R"("available_compressions":["none","lz4"]}})");
}

TEST(Runtime, RunDirectoryHoldsWhatTheEndpointPrinted) {
  auto runtime = Serve("vectoradd");
  ASSERT_NE(runtime, nullptr);
  const std::string body = R"({"inputs":{"a":[1,2,3],"b":[4,5,6]}})";
  RuntimeResponse r = Post(*runtime, "/apply?run_id=abc", body, "application/json+binref");
  ASSERT_EQ(r.status, 200) << r.body.string_view();
  const auto run = std::filesystem::path(runtime->config().output_path) / "run_abc";
  EXPECT_TRUE(std::filesystem::exists(run / "logs" / "tesseract.log"));
  EXPECT_NE(r.body.string_view().find(R"("buffer":"run_abc/)"), std::string_view::npos)
      << r.body.string_view();
}

TEST(RuntimeConfig, ReadsTheBinrefOutputPool) {
  EXPECT_EQ(RuntimeConfig::FromSettings({})->binref_output_pool_mb, 0);
  EXPECT_EQ(RuntimeConfig::FromSettings({{"binref_output_pool_mb", "512"}})->binref_output_pool_mb, 512);
  for (const char* bad : {"", "x", "-1", "12MiB"}) {
    auto config = RuntimeConfig::FromSettings({{"BINREF_OUTPUT_POOL_MB", bad}});
    ASSERT_FALSE(config.ok()) << bad;
    EXPECT_NE(config.status().message().find("TESSERACT_BINREF_OUTPUT_POOL_MB"), std::string::npos);
  }
}

// With a pool, large binref answers come from its spares: the pool directory
// appears beside the run directories, the answers hold the right bytes, and
// the pool goes with the runtime.
TEST(Runtime, LargeBinrefAnswersUseThePool) {
  RuntimeConfig config;
  config.binref_output_pool_mb = 16;
  auto runtime = Serve("vectoradd", config);
  ASSERT_NE(runtime, nullptr);
  const int64_t n = BinrefWriter::kLargeArray / 8;  // float64: one large array
  std::string list = "[1";
  for (int64_t i = 1; i < n; ++i) list += ",1";
  list += "]";
  const std::string body = R"({"inputs":{"a":)" + list + R"(,"b":)" + list + "}}";
  const std::filesystem::path out = runtime->config().output_path;
  // The process's pool: .tesscpp-binref-pool-<pid>-<id>.
  auto pool_dir = [&out]() -> std::filesystem::path {
    const std::string prefix = ".tesscpp-binref-pool-" + std::to_string(::getpid()) + "-";
    for (const auto& entry : std::filesystem::directory_iterator(out)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) return entry.path();
    }
    return {};
  };
  std::filesystem::path pool;
  for (int call = 0; call < 3; ++call) {
    RuntimeResponse r = Post(*runtime, "/apply", body, "application/json+binref");
    ASSERT_EQ(r.status, 200) << r.body.string_view();
    JsonReadOptions read;
    read.arrays = ArrayDetection::kTagged;
    read.array_options.binref_dir = out.string();
    auto answer = ReadJson(r.body.string_view(), read);
    ASSERT_OK(answer);
    const Tensor& result = answer->as_dict().at("result").as_tensor();
    ASSERT_EQ(result.num_elements(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(result.data_as<double>()[i], 2.0) << i;
    pool = pool_dir();
    EXPECT_TRUE(std::filesystem::is_directory(pool));
  }
  runtime.reset();
  EXPECT_FALSE(std::filesystem::exists(pool));
}

}  // namespace
}  // namespace tesscpp

namespace tesscpp {
namespace {

std::string TestStatus(const Runtime& runtime, const std::string& spec) {
  RuntimeResponse r = Post(runtime, "/test", spec);
  if (r.status != 200) return "HTTP " + std::to_string(r.status) + " " + std::string(r.body.string_view());
  const Value v = Parse(r.body.string_view());
  return v.as_dict().at("status").as_string() + ":" + v.as_dict().at("message").as_string();
}

TEST(RuntimeTestEndpoint, ComparesOutputsAndExceptions) {
  RuntimeConfig config;
  config.debug = true;
  auto runtime = Serve("vectoradd", config);
  ASSERT_NE(runtime, nullptr);
  const std::string payload = R"("payload":{"inputs":{"a":[1,2,3],"b":[4,5,6]}})";
  const std::string expected_ok =
      R"("expected_outputs":{"result":{"object_type":"array","shape":[3],"dtype":"float64","data":{"buffer":"AAAAAAAAFEAAAAAAAAAcQAAAAAAAACJA","encoding":"base64"}}})";
  EXPECT_EQ(TestStatus(*runtime, R"({"endpoint":"apply",)" + payload + "," + expected_ok + "}"), "passed:");
  // Plain lists as expected values, and unknown keys ignored.
  EXPECT_EQ(TestStatus(*runtime, R"({"endpoint":"apply",)" + payload +
                                     R"(,"expected_outputs":{"result":[5,7,9]},"whatever":1})"),
            "passed:");
  const std::string wrong = TestStatus(
      *runtime, R"({"endpoint":"apply",)" + payload + R"(,"expected_outputs":{"result":[5,7,10]}})");
  EXPECT_EQ(wrong.rfind("failed:Values are not sufficiently close.", 0), 0u) << wrong;
  const std::string bad_input =
      R"({"endpoint":"apply","payload":{"inputs":{"a":[1,2,3],"b":[4,5]}},"expected_exception":)";
  EXPECT_EQ(TestStatus(*runtime, bad_input + R"("pydantic.ValidationError"})"), "passed:");
  EXPECT_EQ(TestStatus(*runtime, bad_input + R"("ValueError","expected_exception_regex":"same shape"})"),
            "passed:");
  EXPECT_EQ(TestStatus(*runtime, bad_input + R"("KeyError"})").rfind("failed:Expected KeyError, but got", 0),
            0u);
  EXPECT_EQ(
      TestStatus(*runtime, R"({"endpoint":"apply",)" + payload + R"(,"expected_exception":"ValueError"})"),
      "failed:Expected ValueError, but no exception was raised");
  // The component's own failure: jacobian of an output it does not offer.
  EXPECT_EQ(TestStatus(*runtime,
                       R"({"endpoint":"jacobian","payload":{"inputs":{"a":[1],"b":[2]},"jac_inputs":["a"],)"
                       R"("jac_outputs":["result"]},"expected_outputs":{"result":{"a":[[1.0]]}}})"),
            "passed:");
  EXPECT_EQ(
      TestStatus(*runtime, R"({"endpoint":"nope",)" + payload + "," + expected_ok + "}").rfind("failed:", 0),
      0u);
  EXPECT_EQ(TestStatus(*runtime, R"({"endpoint":"apply",)" + payload + "}").substr(0, 8), "HTTP 422");
  EXPECT_EQ(TestStatus(*runtime, R"({"endpoint":"apply",)" + payload + R"(,"expected_exception":"no.Such"})")
                .substr(0, 8),
            "HTTP 422");
}

}  // namespace
}  // namespace tesscpp
