// A second component kind — callbacks with their own validation and the
// exact OpenAPI document tesseract-runtime serves for the Python twin —
// served by the unchanged Runtime: routing, negotiation, run directories,
// failures and /test behave as for C++ components. (The same kind served over
// HTTP and called by tesseract-core's SDK: tests/conformance/
// test_second_component_kind.py.)
#include "tesscpp/internal/runtime/served_component.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/status_matchers.h"
#include "support/callback_component.h"
#include "support/test_files.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::runtime {
namespace {

using tesscpp::testing::DataPath;
using tesscpp::testing::ReadFile;

Value GoldenDocument() {
  auto doc = ReadJson(ReadFile(DataPath("golden/runtime/vectoradd.openapi.json")));
  EXPECT_OK(doc);
  return doc.ok() ? *doc : Value();
}

std::unique_ptr<Runtime> Serve(bool debug = false) {
  RuntimeConfig config;
  config.debug = debug;
  config.output_path =
      (std::filesystem::temp_directory_path() / ("tesscpp_served_component_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(config.output_path);
  auto runtime = Runtime::Make(CallbackVectoradd(GoldenDocument()), config);
  EXPECT_OK(runtime);
  return runtime.ok() ? *std::move(runtime) : nullptr;
}

RuntimeResponse Send(const Runtime& runtime, std::string method, std::string target, std::string body = "",
                     std::optional<std::string> accept = std::nullopt) {
  RuntimeRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.accept = std::move(accept);
  request.content_type = "application/json";
  request.body = Buffer::FromString(body);
  return runtime.Handle(request);
}

Value Body(const RuntimeResponse& r) {
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  auto v = ReadJson(r.body.string_view(), read);
  EXPECT_OK(v) << r.body.string_view();
  return v.ok() ? *v : Value();
}

constexpr const char* kApply = R"({"inputs": {
  "a": {"object_type": "array", "shape": [3], "dtype": "float32", "data": {"buffer": [1, 2, 3], "encoding": "json"}},
  "b": {"object_type": "array", "shape": [3], "dtype": "float32", "data": {"buffer": [10, 20, 30], "encoding": "json"}},
  "s": 2}})";

TEST(ServedComponent, ItsOwnDocumentIsServedAndRoutesFollowIt) {
  auto runtime = Serve();
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->endpoints(), (std::vector<std::string>{"apply", "jacobian", "health"}));
  const RuntimeResponse doc = Send(*runtime, "GET", "/openapi.json");
  EXPECT_EQ(doc.status, 200);
  EXPECT_EQ(Body(doc), GoldenDocument());
  EXPECT_EQ(Send(*runtime, "GET", "/docs").status, 200);
  EXPECT_EQ(Send(*runtime, "POST", "/abstract_eval", "{}").status, 404);  // the kind lacks it
  const RuntimeResponse wrong_method = Send(*runtime, "GET", "/apply");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.headers, (decltype(wrong_method.headers){{"Allow", "POST"}}));
  EXPECT_EQ(Send(*runtime, "GET", "/health").body.string_view(), R"({"status":"ok"})");
}

TEST(ServedComponent, CallsAreNegotiatedAndRunInARunDirectory) {
  auto runtime = Serve();
  ASSERT_NE(runtime, nullptr);
  const RuntimeResponse r = Send(*runtime, "POST", "/apply?run_id=cb1", kApply, "application/json+base64");
  ASSERT_EQ(r.status, 200) << r.body.string_view();
  EXPECT_EQ(r.content_type, "application/json+base64");
  EXPECT_NE(r.body.string_view().find(R"("encoding":"base64")"), std::string_view::npos);
  const Value answer = Body(r);
  const Tensor& result = answer.as_dict().at("result").as_tensor();
  ASSERT_EQ(result.num_elements(), 3);
  EXPECT_EQ(result.data_as<double>()[2], 36.0);
  // The callback's stdout went into the run's log, as a C++ component's does.
  std::ifstream log(runtime->config().output_path + "/run_cb1/logs/tesseract.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("callback apply on 3 elements"), std::string::npos) << text.str();

  const RuntimeResponse jac =
      Send(*runtime, "POST", "/jacobian",
           std::string(kApply).insert(1, R"("jac_inputs": ["s"], "jac_outputs": ["result"],)"));
  ASSERT_EQ(jac.status, 200) << jac.body.string_view();
  const Value partials = Body(jac);
  const Tensor& ds = partials.as_dict().at("result").as_dict().at("s").as_tensor();
  EXPECT_EQ(ds.data_as<double>()[1], 2.0);
}

TEST(ServedComponent, ItsValidationIssuesAreThe422) {
  auto runtime = Serve();
  ASSERT_NE(runtime, nullptr);
  const RuntimeResponse r = Send(*runtime, "POST", "/apply", R"({"inputs": {"b": [1]}})");
  EXPECT_EQ(r.status, 422);
  const Value answer = Body(r);
  const Value::List& detail = answer.as_dict().at("detail").as_list();
  ASSERT_EQ(detail.size(), 1u);
  EXPECT_EQ(detail[0].as_dict().at("type"), Value("missing"));
  EXPECT_EQ(detail[0].as_dict().at("loc"), Value(Value::List{"body", "inputs", "a"}));
  // The runtime's own body rules come before the kind's.
  EXPECT_EQ(Send(*runtime, "POST", "/apply", "{not json").status, 422);
}

TEST(ServedComponent, FailuresNameTheirExceptionHoweverTheyCame) {
  auto runtime = Serve(/*debug=*/true);
  ASSERT_NE(runtime, nullptr);
  // A C++ exception thrown from the call: caught and named by the runtime.
  const std::string negative =
      std::string(kApply).replace(std::string(kApply).find("\"s\": 2"), 6, "\"s\": -1");
  const RuntimeResponse thrown = Send(*runtime, "POST", "/apply", negative);
  EXPECT_EQ(thrown.status, 500);
  EXPECT_NE(thrown.body.string_view().find("std::invalid_argument: s must not be negative"),
            std::string::npos)
      << thrown.body.string_view();
  // A failure the kind names itself (as a Python module's raised class) is
  // what /test matches, not a class guessed from the status code.
  const std::string empty =
      R"({"inputs": {"a": {"shape": [0], "dtype": "float32", "data": {"buffer": [], "encoding": "json"}},
                                           "b": {"shape": [0], "dtype": "float32", "data": {"buffer": [], "encoding": "json"}}}})";
  const RuntimeResponse named = Send(*runtime, "POST", "/apply", empty);
  EXPECT_EQ(named.status, 500);
  EXPECT_NE(named.body.string_view().find("ValueError: nothing to add"), std::string::npos);
  const RuntimeResponse test =
      Send(*runtime, "POST", "/test",
           R"({"endpoint": "apply", "expected_exception": "ValueError", "payload": )" + empty + "}");
  ASSERT_EQ(test.status, 200) << test.body.string_view();
  EXPECT_EQ(Body(test).as_dict().at("status"), Value("passed")) << test.body.string_view();
  // In-process calls report them as tesseract-core's in-process client does.
  JsonReadOptions read;
  read.arrays = ArrayDetection::kShaped;
  auto payload = ReadJson(empty, read);
  ASSERT_OK(payload);
  auto in_process = runtime->Call("apply", *payload);
  EXPECT_EQ(in_process.status().message(), "Error running Tesseract API apply: ValueError: nothing to add");
  EXPECT_EQ(runtime->Call("apply", Value(Value::Dict{})).status().code(), StatusCode::kValidationError);
}

TEST(ServedComponent, AKindWithoutApplyIsRefused) {
  auto lacking = std::make_shared<const CallbackComponent>(
      "no-apply", GoldenDocument(), std::map<core::EndpointId, CallbackComponent::Endpoint>{});
  auto runtime = Runtime::Make(lacking, RuntimeConfig{});
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(runtime.status().message().find("'no-apply' has no apply endpoint"), std::string::npos);
}

}  // namespace
}  // namespace tesscpp::runtime
