// reuse_calls.h: apply and VJP handed to a Runtime directly, with and
// without forward reuse (test support for the derived derivatives' forward
// reuse tests, whose components take `u` and `nu` and answer `u_next` and
// `energy`).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/runtime_post.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::testing {

class ReuseCalls {
 public:
  explicit ReuseCalls(std::unique_ptr<Runtime> runtime) : runtime_(std::move(runtime)) {}

  /// \brief Calls to `component` through the runtime of the C++ kind, its run
  /// directories in the test's temporary directory under `output`.
  static Result<std::unique_ptr<ReuseCalls>> Of(Component component, const std::string& output) {
    RuntimeConfig config;
    config.output_path = ::testing::TempDir() + "/" + output;
    TESS_ASSIGN_OR_RETURN(
        auto runtime, cpp_kind::MakeRuntime(std::make_shared<const Component>(std::move(component)), config));
    return std::make_unique<ReuseCalls>(std::move(runtime));
  }

  RuntimeResponse Post(const std::string& endpoint, const std::string& body,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    RuntimeResponse response = PostJson(*runtime_, endpoint, body, std::move(headers));
    EXPECT_EQ(response.status, 200) << response.body.string_view();
    return response;
  }

  /// \brief An apply at `inputs` that asks for nothing: its body.
  std::string Apply(const std::string& inputs) {
    return std::string(Post("apply", R"({"inputs":)" + inputs + "}").body.string_view());
  }

  /// \brief A kept apply at `inputs`: its body and its reference.
  std::pair<std::string, std::string> KeptApply(const std::string& inputs) {
    const RuntimeResponse r = Post("apply", R"({"inputs":)" + inputs + "}", {{"Tesscpp-Keep", "1"}});
    const std::string reference = HeaderOf(r, "Tesscpp-Residuals");
    EXPECT_FALSE(reference.empty()) << "the apply kept nothing";
    return {std::string(r.body.string_view()), reference};
  }

  /// \brief A VJP with respect to both inputs, referring to `reference` if any.
  std::string Vjp(const std::string& inputs, const std::string& outputs, const std::string& cotangent,
                  const std::string& reference = "") {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!reference.empty()) headers.emplace_back("Tesscpp-Residuals", reference);
    const std::string body = R"({"inputs":)" + inputs + R"(,"vjp_inputs":["nu","u"],"vjp_outputs":)" +
                             outputs + R"(,"cotangent_vector":)" + cotangent + "}";
    return std::string(Post("vector_jacobian_product", body, headers).body.string_view());
  }

 private:
  std::unique_ptr<Runtime> runtime_;
};

}  // namespace tesscpp::testing
