// A GPU transport written in this test and nowhere else, to show that the
// transport seam is one place (docs/gpu-transport.md, "Adding a
// transport"): registered here, then served by the unchanged runtime and HTTP
// server, requested, checked and chosen by the unchanged client, refused by a
// server that does not serve it as tesseract-core refuses a transport it does
// not serve, and vetted by image sessions.
//
// "host_staged" copies each array it carries into a file of its own in a
// directory both ends see; its descriptor is "<file>:<device>" (-1: host,
// else the CUDA ordinal the reader puts it on), and the reader removes the
// file. It carries host tensors too, so that it runs end to end on machines
// without a GPU; on a GPU machine CUDA tensors go through it as well.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status_matchers.h"
#include "gpu_transport/registry.h"
#include "support/served_in_thread.h"
#include "support/test_files.h"
#include "tesscpp/client.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/loader/component_library.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp {
namespace {

namespace fs = std::filesystem;
using gpu_transport::CheckAnswer;
using gpu_transport::CheckOutcome;
using gpu_transport::CheckPost;
using gpu_transport::HeaderLookup;
using gpu_transport::Headers;

constexpr std::string_view kName = "host_staged";

// What went through the transport, in this process (both ends live here).
struct Counts {
  std::atomic<int> exported{0};
  std::atomic<int> imported{0};
  std::atomic<int> imported_on_device{0};
  std::atomic<int> checks{0};
};
Counts& Count() {
  static Counts counts;
  return counts;
}

const fs::path& StagingDir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("tesscpp-staged-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

struct Descriptor {
  std::string file;
  int device = -1;
};

// "<name>.bin:<device>", the name of hex digits and dashes: never a path.
Result<Descriptor> ParseDescriptor(std::string_view text) {
  const size_t colon = text.rfind(':');
  const std::string_view file = text.substr(0, colon);
  Descriptor d{std::string(file)};
  const std::string_view device = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  const bool named =
      file.size() > 4 && file.substr(file.size() - 4) == ".bin" &&
      file.substr(0, file.size() - 4).find_first_not_of("0123456789abcdef-") == std::string::npos;
  const auto [end, error] = std::from_chars(device.data(), device.data() + device.size(), d.device);
  if (!named || device.empty() || error != std::errc() || end != device.data() + device.size() ||
      d.device < -1) {
    return Status::ValidationError("a host_staged buffer is '<hex>.bin:<device>', got '", text, "'");
  }
  return d;
}

class StagedArrays final : public DeviceArrayReader, public DeviceArrayWriter {
 public:
  bool Reads(std::string_view encoding) const override { return encoding == kName; }

  Result<Tensor> Import(std::string_view /*encoding*/, std::string_view descriptor, Dtype dtype,
                        const Shape& shape) override {
    TESS_ASSIGN_OR_RETURN(const Descriptor d, ParseDescriptor(descriptor));
    const fs::path path = StagingDir() / d.file;
    if (!fs::exists(path)) return Status::NotFound("no staged array ", d.file);
    const std::string bytes = testing::ReadFile(path.string());
    fs::remove(path);
    TESS_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(dtype, shape));
    if (static_cast<int64_t>(bytes.size()) != host.nbytes()) {
      return Status::InvalidArgument("staged array ", d.file, " holds ", bytes.size(), " bytes, not ",
                                     host.nbytes());
    }
    std::copy(bytes.begin(), bytes.end(), host.data());
    ++Count().imported;
    if (d.device < 0) return host;
    ++Count().imported_on_device;
    return cuda::CopyToDevice(host, d.device);
  }

  std::string_view encoding() const override { return kName; }
  bool Carries(const Tensor& /*tensor*/) const override { return true; }

  Result<std::string> Export(const Tensor& tensor) override {
    TESS_ASSIGN_OR_RETURN(const Tensor host, tensor.ViewOrCopyToHost());
    static std::atomic<int> serial{0};
    const std::string file = std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".bin";
    std::ofstream out(StagingDir() / file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(host.nbytes()));
    if (!out.good()) return Status::IoError("cannot stage ", file);
    ++Count().exported;
    const int device = tensor.device().host_accessible() ? -1 : tensor.device().id;
    return file + ":" + std::to_string(device);
  }
};

// The check both ends run: the client's bytes through the transport, and
// back reversed.
Result<Tensor> Reversed(const Tensor& tensor) {
  TESS_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(tensor.dtype(), tensor.shape()));
  std::reverse_copy(tensor.data(), tensor.data() + tensor.nbytes(), copy.data());
  return copy;
}

class StagedServerCall final : public gpu_transport::ServerCall {
 public:
  DeviceArrayWriter* outputs() override { return &outputs_; }
  Result<Headers> Finish(const Value& /*request_body*/, const Value* /*written*/) override {
    return Headers{};
  }

 private:
  StagedArrays outputs_;
};

class StagedServer final : public gpu_transport::ServerTransport {
 public:
  void OnRequest(const Headers& /*request_headers*/) override {}
  std::unique_ptr<DeviceArrayReader> RequestArrays() override { return std::make_unique<StagedArrays>(); }
  Result<std::unique_ptr<gpu_transport::ServerCall>> Begin(const Headers& /*request_headers*/) override {
    return std::unique_ptr<gpu_transport::ServerCall>(std::make_unique<StagedServerCall>());
  }
  Status Settle(const Value& /*value*/) const override { return Status::OK(); }
  std::pair<Buffer, Headers> AnswerCheck(const Value& request) override {
    ++Count().checks;
    StagedArrays arrays;
    ArrayDecodeOptions read;
    read.device_arrays = &arrays;
    const Value* array = request.as_dict().find("array");
    Result<Tensor> sent = array != nullptr ? DecodeArray(*array, read) : Status::InvalidArgument("no array");
    Result<Tensor> reply = sent.ok() ? Reversed(*sent) : sent.status();
    JsonWriteOptions write;
    write.arrays.device_arrays = &arrays;
    const Value body = reply.ok() ? Value(Value::Dict{{"ok", true}, {"array", Value(*reply)}})
                                  : Value(Value::Dict{{"ok", false}, {"reason", reply.status().message()}});
    return {*WriteJson(body, write), Headers{}};
  }
};

class StagedClientCall final : public gpu_transport::ClientCall {
 public:
  explicit StagedClientCall(bool requested) : requested_(requested) {}
  DeviceArrayWriter* inputs() override { return requested_ ? &inputs_ : nullptr; }
  Result<std::vector<std::string>> Headers(const Value* /*payload*/) override {
    return std::vector<std::string>{};
  }
  void Unanswered() override {}
  Result<DeviceArrayReader*> Answered(int /*status*/, const HeaderLookup& /*header*/) override {
    return requested_ ? &outputs_ : nullptr;
  }
  void Decoded(const Value& /*outputs*/) override {}

 private:
  bool requested_;
  StagedArrays inputs_;
  StagedArrays outputs_;
};

class StagedClient final : public gpu_transport::ClientTransport {
 public:
  std::unique_ptr<gpu_transport::ClientCall> Begin(bool requested) override {
    return std::make_unique<StagedClientCall>(requested);
  }
  Result<CheckOutcome> Check(std::string_view /*peer*/, const CheckPost& post) override {
    TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make({16}));
    TESS_ASSIGN_OR_RETURN(Tensor sent, Tensor::Allocate(Dtype::kUInt8, shape));
    for (int i = 0; i < 16; ++i) sent.data()[i] = static_cast<uint8_t>(i * 7);
    StagedArrays arrays;
    JsonWriteOptions write;
    write.arrays.device_arrays = &arrays;
    TESS_ASSIGN_OR_RETURN(Buffer body,
                          WriteJson(Value::Dict{{"gpu_transport", kName}, {"array", Value(sent)}}, write));
    TESS_ASSIGN_OR_RETURN(CheckAnswer answer, post(body));
    JsonReadOptions read;
    read.arrays = ArrayDetection::kTagged;
    read.array_options.device_arrays = &arrays;
    TESS_ASSIGN_OR_RETURN(Value reply, ReadJson(answer.body, read));
    const Value* back = reply.is_dict() ? reply.as_dict().find("array") : nullptr;
    if (back == nullptr || !back->is_tensor()) return CheckOutcome{false, "no array came back"};
    TESS_ASSIGN_OR_RETURN(Tensor expected, Reversed(sent));
    const bool same = std::equal(expected.bytes().begin(), expected.bytes().end(),
                                 back->as_tensor().bytes().begin(), back->as_tensor().bytes().end());
    return same ? CheckOutcome{true, ""} : CheckOutcome{false, "the bytes differ"};
  }
  std::optional<std::vector<std::string>> Closing() override { return std::nullopt; }
};

gpu_transport::TransportEntry StagedEntry() {
  gpu_transport::TransportEntry entry;
  entry.name = std::string(kName);
  entry.wire_encoding = std::string(kName);
  entry.check_descriptor = [](std::string_view descriptor) { return ParseDescriptor(descriptor).status(); };
  entry.available = [] { return Status::OK(); };
  entry.make_server = [](const gpu_transport::ServerTransportOptions&) {
    return std::unique_ptr<gpu_transport::ServerTransport>(std::make_unique<StagedServer>());
  };
  entry.make_client = [](const gpu_transport::ClientTransportOptions&) {
    return std::unique_ptr<gpu_transport::ClientTransport>(std::make_unique<StagedClient>());
  };
  entry.container_flags = {"--shm-size=1g"};
  entry.one_worker = true;  // its files are read where they were named
  entry.automatic = true;   // after cuda_ipc, which is registered first
  return entry;
}

// Registered before any test runs (each may run in a process of its own).
class Registration final : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_OK(gpu_transport::RegisterTransport(StagedEntry())); }
  void TearDown() override { fs::remove_all(StagingDir()); }
};
[[maybe_unused]] ::testing::Environment* const kRegistration =
    ::testing::AddGlobalTestEnvironment(new Registration);  // gtest owns it

class StagedTransport : public ::testing::Test {
 protected:
  // vectoradd (s·a + b) served over HTTP on a free port, with `transport`.
  void Serve(const std::string& transport) {
    auto library = ComponentLibrary::Open(std::string(TESS_EXAMPLES_DIR) + "/libvectoradd.so");
    ASSERT_OK(library);
    RuntimeConfig config;
    config.gpu_transport = transport;
    config.output_path = (StagingDir() / "outputs").string();
    std::shared_ptr<const Component> component(*library, &(*library)->component());
    auto runtime = cpp_kind::MakeRuntime(component, config);
    ASSERT_OK(runtime);
    auto served = testing::ServedInThread::Start(*std::move(runtime));
    ASSERT_OK(served);
    served_ = *std::move(served);
    url_ = served_->url();
  }

  static Value Inputs(const Tensor& a, const Tensor& b) {
    return Value::Dict{{"a", Value(a)}, {"b", Value(b)}, {"s", Value(2.0)}};
  }

  std::unique_ptr<testing::ServedInThread> served_;
  std::string url_;
};

Tensor Floats(std::vector<float> values) {
  auto shape = Shape::Make({static_cast<int64_t>(values.size())});
  auto tensor = Tensor::Allocate(Dtype::kFloat32, *shape);
  std::copy(values.begin(), values.end(), reinterpret_cast<float*>(tensor->data()));
  return *tensor;
}

std::vector<double> Doubles(const Value& outputs) {
  const Tensor& t = outputs.as_dict().find("result")->as_tensor();
  auto host = t.ViewOrCopyToHost();
  const auto* d = reinterpret_cast<const double*>(host->data());
  return {d, d + host->shape().num_elements()};
}

size_t StagedFilesLeft() {
  return static_cast<size_t>(std::count_if(fs::directory_iterator(StagingDir()), fs::directory_iterator(),
                                           [](const fs::directory_entry& e) { return e.is_regular_file(); }));
}

TEST_F(StagedTransport, IsServedRequestedCheckedAndChosenThroughTheRegistry) {
  Serve(std::string(kName));
  EXPECT_NE(served_->runtime().openapi_document().string_view().find(
                R"("x-supported-gpu-transports":["none","host_staged"])"),
            std::string_view::npos);

  ClientOptions options;
  options.encoding.gpu_transport = std::string(kName);
  auto tesseract = Tesseract::FromUrl(url_, options);
  ASSERT_OK(tesseract);
  auto chosen = tesseract->ResolveGpuTransport();
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->transport, kName);
  EXPECT_EQ(Count().checks.load(), 1);

  const int exported = Count().exported, imported = Count().imported;
  auto outputs = tesseract->Apply(Inputs(Floats({1, 2, 3}), Floats({4, 5, 6})));
  ASSERT_OK(outputs);
  EXPECT_EQ(Doubles(*outputs), (std::vector<double>{6, 9, 12}));
  // a and b went out through it, and result came back through it.
  EXPECT_EQ(Count().exported - exported, 3);
  EXPECT_EQ(Count().imported - imported, 3);
  EXPECT_EQ(StagedFilesLeft(), 0U);

  // A view asking for none sends base64 and gets base64: the transport is idle.
  auto plain = tesseract->WithEncoding({std::nullopt, "none", std::nullopt});
  ASSERT_OK(plain);
  const int before = Count().exported;
  auto again = plain->Apply(Inputs(Floats({1, 1}), Floats({0, 1})));
  ASSERT_OK(again);
  EXPECT_EQ(Doubles(*again), (std::vector<double>{2, 3}));
  EXPECT_EQ(Count().exported, before);

  // Asking for nothing: the client's automatic choice finds it offered and working.
  auto automatic = Tesseract::FromUrl(url_);
  ASSERT_OK(automatic);
  auto resolved = automatic->ResolveGpuTransport();
  ASSERT_OK(resolved);
  EXPECT_EQ(resolved->transport, kName);
}

TEST_F(StagedTransport, CarriesCudaTensorsOnAGpu) {
  if (!cuda::CheckAvailable().ok()) GTEST_SKIP() << "no CUDA device";
  Serve(std::string(kName));
  ClientOptions options;
  options.encoding.gpu_transport = std::string(kName);
  auto tesseract = Tesseract::FromUrl(url_, options);
  ASSERT_OK(tesseract);
  auto a = cuda::CopyToDevice(Floats({1, 2}), 0);
  auto b = cuda::CopyToDevice(Floats({3, 4}), 0);
  ASSERT_OK(a);
  ASSERT_OK(b);
  const int on_device = Count().imported_on_device;
  auto outputs = tesseract->Apply(Inputs(*a, *b));
  ASSERT_OK(outputs);
  EXPECT_EQ(Doubles(*outputs), (std::vector<double>{5, 8}));
  EXPECT_EQ(Count().imported_on_device - on_device, 2);  // the server read a and b onto the device
}

TEST_F(StagedTransport, IsRefusedByAServerThatDoesNotServeIt) {
  Serve("none");
  const auto post = [&](const std::string& buffer) {
    RuntimeRequest request;
    request.method = "POST";
    request.target = "/apply";
    request.content_type = "application/json";
    request.body = Buffer::FromString(R"({"inputs":{"a":{"shape":[1],"dtype":"float32","data":{"buffer":")" +
                                      buffer + R"(","encoding":"host_staged"}},"b":[1.0]}})");
    return served_->runtime().Handle(request);
  };
  const RuntimeResponse well_formed = post("0a-1.bin:-1");
  EXPECT_EQ(well_formed.status, 422);
  EXPECT_NE(well_formed.body.string_view().find(
                "GPU transport 'host_staged' is not enabled on this Tesseract (available: ('none',))"),
            std::string_view::npos)
      << well_formed.body.string_view();
  const RuntimeResponse malformed = post("../etc/passwd:-1");
  EXPECT_EQ(malformed.status, 422);
  EXPECT_NE(malformed.body.string_view().find("array_non_numeric"), std::string_view::npos)
      << malformed.body.string_view();

  // The client will not ask a server for what it does not offer.
  ClientOptions options;
  options.encoding.gpu_transport = std::string(kName);
  auto tesseract = Tesseract::FromUrl(url_, options);
  ASSERT_OK(tesseract);
  EXPECT_FALSE(tesseract->Apply(Inputs(Floats({1}), Floats({1}))).ok());
}

TEST(StagedTransportNames, AreTheRegistrysWhereverTransportsAreNamed) {
  ASSERT_NE(gpu_transport::FindTransport(kName), nullptr);
  EXPECT_NE(gpu_transport::TransportChoices(NameList::kPlain).find("host_staged"), std::string::npos);
  EXPECT_FALSE(gpu_transport::RegisterTransport(StagedEntry()).ok());  // a name is taken once
  // Image sessions read what the entry says before any engine is asked.
  ImageOptions image;
  image.gpu_transport = std::string(kName);
  image.num_workers = 2;
  const auto refused = Tesseract::FromImage("any-image", image);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot be served by more than one worker"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace tesscpp
