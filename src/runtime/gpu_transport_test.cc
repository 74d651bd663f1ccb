// The server side of the cuda_ipc transport that needs no GPU: advertisement,
// the check route's refusals and the 422s, worded
// as tesseract-core 1.15 words them (docs/gpu-transport-protocol.md 4, 5, 7). The GPU
// paths are exercised on a GPU machine by python/tests/test_gpu_transport.py.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/status_matchers.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/loader/component_library.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp {
namespace {

std::unique_ptr<Runtime> ServeNoop(const std::string& gpu_transport) {
  auto library = ComponentLibrary::Open(std::string(TESS_EXAMPLES_DIR) + "/libnoop.so");
  EXPECT_OK(library);
  RuntimeConfig config;
  config.gpu_transport = gpu_transport;
  config.output_path = (std::filesystem::temp_directory_path() / "tesscpp_gpu_transport_test").string();
  std::filesystem::create_directories(config.output_path);
  std::shared_ptr<const Component> component(*library, &(*library)->component());
  auto runtime = cpp_kind::MakeRuntime(component, config);
  EXPECT_OK(runtime);
  return runtime.ok() ? *std::move(runtime) : nullptr;
}

RuntimeResponse Request(const Runtime& runtime, const std::string& method, const std::string& path,
                        const std::string& body) {
  RuntimeRequest request;
  request.method = method;
  request.target = path;
  request.content_type = "application/json";
  request.body = Buffer::FromString(body);
  return runtime.Handle(request);
}

const char* kEmptyArray =
    R"j({"inputs":{"x":{"object_type":"array","shape":[0],"dtype":"float32","data":{"buffer":")j"
    R"j(00010203-0405-0607-0809-0a0b0c0d0e0f::0:0","encoding":"cuda_ipc"}}}})j";

TEST(GpuTransportServer, DisabledRefusesAsTheReference) {
  auto runtime = ServeNoop("none");
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(Request(*runtime, "POST", "/check_gpu_transport", "{}").status, 404);
  const RuntimeResponse r = Request(*runtime, "POST", "/apply", kEmptyArray);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(
      r.body.string_view().find(
          R"j("msg":"Failed to decode array buffer (cuda_ipc encoding): GPU transport 'cuda_ipc' is not )j"
          R"j(enabled on this Tesseract (available: ('none',))")j"),
      std::string_view::npos)
      << r.body.string_view();
}

TEST(GpuTransportServer, EnabledAdvertisesAndAnswersChecks) {
  if (!cuda::BuiltWithCuda()) GTEST_SKIP() << "built without CUDA";
  auto runtime = ServeNoop("cuda_ipc");
  ASSERT_NE(runtime, nullptr);
  EXPECT_NE(
      runtime->openapi_document().string_view().find(R"j("x-supported-gpu-transports":["none","cuda_ipc"])j"),
      std::string_view::npos);
  RuntimeResponse r = Request(*runtime, "GET", "/check_gpu_transport", "");
  EXPECT_EQ(r.status, 405);
  r = Request(*runtime, "POST", "/check_gpu_transport", "[1]");
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.string_view().find(R"j("type":"dict_type","loc":["body"])j"), std::string_view::npos);

  auto reply = [&](const std::string& body) {
    const RuntimeResponse answer = Request(*runtime, "POST", "/check_gpu_transport", body);
    EXPECT_EQ(answer.status, 200);
    return std::string(answer.body.string_view());
  };
  EXPECT_EQ(reply(R"j({"gpu_transport":"none"})j"),
            R"j({"ok":false,"reason":"gpu_transport='none' is not enabled on this Tesseract )j"
            R"j((available: ['none', 'cuda_ipc'])"})j");
  EXPECT_EQ(reply("{}"), R"j({"ok":false,"reason":"gpu_transport=None is not enabled on this Tesseract )j"
                         R"j((available: ['none', 'cuda_ipc'])"})j");
  EXPECT_EQ(reply(R"j({"gpu_transport":"cuda_ipc","array":{"dtype":"float32"}})j"),
            R"j({"ok":false,"reason":"the Tesseract could not exchange GPU memory with the client: )j"
            R"j(ValueError: expected a uint8 array"})j");
  EXPECT_EQ(reply(R"j({"gpu_transport":"cuda_ipc","array":{"dtype":"uint8","shape":[255]}})j"),
            R"j({"ok":false,"reason":"the Tesseract could not exchange GPU memory with the client: )j"
            R"j(ValueError: expected an array of 256 bytes"})j");
  EXPECT_EQ(reply(R"j({"gpu_transport":"cuda_ipc","array":{"dtype":"uint8","shape":[256],"data":{}}})j"),
            R"j({"ok":false,"reason":"the Tesseract could not exchange GPU memory with the client: )j"
            R"j(ValueError: expected a cuda_ipc array"})j");

  if (cuda::CheckAvailable().ok()) return;  // the device paths: test_gpu_transport.py
  // Without a device, reading a well-formed array fails naming its GPU and what the driver says.
  const std::string check = reply(
      R"j({"gpu_transport":"cuda_ipc","expected":"","array":{"dtype":"uint8","shape":[256],"data":{"buffer":")j"
      R"j(00010203-0405-0607-0809-0a0b0c0d0e0f:q6urq6urq6urq6urq6urq6urq6urq6urq6urq6ur)j"
      R"j(q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urqw==:0:256","encoding":"cuda_ipc"}}})j");
  EXPECT_NE(
      check.find("RuntimeError: The array lives on the GPU with UUID 00010203-0405-0607-0809-0a0b0c0d0e0f, "
                 "but this process can use no GPU (" +
                 cuda::CheckAvailable().message()),
      std::string::npos)
      << check;
  r = Request(*runtime, "POST", "/apply", kEmptyArray);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.string_view().find("array_decode_error"), std::string_view::npos);
}

TEST(GpuTransportServer, IpcEventsOnlyForClientsThatOfferThem) {
  if (!cuda::BuiltWithCuda()) GTEST_SKIP() << "built without CUDA";
  auto served = ServeNoop("cuda_ipc");
  auto plain = ServeNoop("none");
  ASSERT_NE(served, nullptr);
  ASSERT_NE(plain, nullptr);
  auto apply = [](const Runtime& runtime, bool offer, std::optional<std::string> inputs_event) {
    RuntimeRequest request;
    request.method = "POST";
    request.target = "/apply";
    request.content_type = "application/json";
    request.body = Buffer::FromString(
        R"j({"inputs":{"x":{"shape":[2],"dtype":"float32","data":{"buffer":[1.0,2.0],"encoding":"json"}}}})j");
    // Lower case, as a client may send them: names match case-insensitively.
    if (offer) request.headers.emplace_back("tesscpp-ipc-events", "1");
    if (inputs_event) request.headers.emplace_back("Tesscpp-Inputs-Event", *std::move(inputs_event));
    return runtime.Handle(request);
  };
  auto header = [](const RuntimeResponse& r, const std::string& name) -> std::optional<std::string> {
    for (const auto& [key, value] : r.headers) {
      if (key == name) return value;
    }
    return std::nullopt;
  };
  RuntimeResponse r = apply(*served, false, std::nullopt);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(header(r, "Tesscpp-Ipc-Events").has_value());  // 1.15 clients never see it
  r = apply(*served, true, std::nullopt);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(header(r, "Tesscpp-Ipc-Events"), "1");
  EXPECT_FALSE(header(r, "Tesscpp-Exports-Event").has_value());  // nothing on a device
  r = apply(*served, true, "00010203-0405-0607-0809-0a0b0c0d0e0f:q6ur");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.string_view().find("Tesscpp-Inputs-Event: the handle must be the base64 of 64 bytes"),
            std::string_view::npos)
      << r.body.string_view();
  r = apply(*plain, true, "anything");  // without the transport there is nothing to order
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.headers.empty());
}

}  // namespace
}  // namespace tesscpp
