// Fuzz target: a served component's request handling. The first input byte
// picks the endpoint of the univariate example (all five kinds), the next
// line is the Accept header, the rest the body; one bit picks a runtime with
// the cuda_ipc transport enabled (its check route and export bookkeeping;
// without a GPU every import fails cleanly), another sends the Accept line as
// Tesseract-Exports-Done too. Whatever arrives, the runtime must answer with a
// well-formed response — never crash, hang or answer 2xx with a body that is
// not JSON.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/runtime/runtime.h"

// The example's entry point, compiled into this binary (examples/univariate).
extern "C" const TesscppComponentEntryV1* TESSCPP_COMPONENT_ENTRY_SYMBOL();

namespace {

const tesscpp::Runtime& Served(bool gpu_transport) {
  static const auto make = [](const char* transport) {
    std::shared_ptr<const tesscpp::Component> component(
        static_cast<tesscpp::Component*>(TESSCPP_COMPONENT_ENTRY_SYMBOL()->create()));
    tesscpp::RuntimeConfig config;
    config.debug = true;  // /test too
    config.output_path = "/tmp/tesscpp-fuzz-runtime";
    config.input_path = "/tmp/tesscpp-fuzz-runtime";
    config.gpu_transport = transport;
    return *tesscpp::cpp_kind::MakeRuntime(component, config);
  };
  static const std::unique_ptr<tesscpp::Runtime> plain = make("none");
  static const std::unique_ptr<tesscpp::Runtime> gpu =
      make(tesscpp::cuda::BuiltWithCuda() ? "cuda_ipc" : "none");
  return gpu_transport ? *gpu : *plain;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One fixed run_id: every wrapped call would otherwise leave a run directory.
  static const char* const kTargets[] = {"/apply?run_id=fuzz",
                                         "/jacobian?run_id=fuzz",
                                         "/jacobian_vector_product?run_id=fuzz",
                                         "/vector_jacobian_product?run_id=fuzz",
                                         "/abstract_eval",
                                         "/test",
                                         "/apply?run_id=..",
                                         "/health",
                                         "/check_gpu_transport"};
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  tesscpp::RuntimeRequest request;
  request.method = data[0] & 0x80 ? "GET" : "POST";
  request.target = kTargets[data[0] % (sizeof kTargets / sizeof kTargets[0])];
  request.content_type = data[0] & 0x40 ? "text/plain" : "application/json";
  if (const size_t nl = rest.find('\n'); nl != std::string_view::npos) {
    request.accept = std::string(rest.substr(0, nl));
    // The GPU transport's headers, any text (names in any case).
    if (data[0] & 0x10) request.headers.emplace_back("Tesseract-Exports-Done", *request.accept);
    if (data[0] & 0x08) request.headers.emplace_back("tesscpp-borrower", *request.accept);
    if (data[0] & 0x04) request.headers.emplace_back("Tesscpp-Ipc-Events", "1");
    if (data[0] & 0x02) request.headers.emplace_back("Tesscpp-Inputs-Event", *request.accept);
    rest.remove_prefix(nl + 1);
  }
  request.body = tesscpp::Buffer::FromString(std::string(rest));
  const tesscpp::RuntimeResponse response = Served((data[0] & 0x20) != 0).Handle(request);
  if (response.status < 200 || response.status > 599) std::abort();
  if (response.status == 200 && response.content_type.rfind("application/json", 0) == 0 &&
      !tesscpp::ReadJson(response.body.string_view()).ok()) {
    std::abort();
  }
  return 0;
}
