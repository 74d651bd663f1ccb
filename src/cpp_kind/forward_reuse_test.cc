// Forward reuse through the runtime for a hand-written C++ component
// (docs/forward-reuse.md): the apply a client asks to keep stores its solve,
// a VJP/JVP referring to it runs without solving again, and every reference
// that cannot be honoured (other inputs, released, unknown, malformed)
// recomputes the same answer.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status_matchers.h"
#include "support/runtime_post.h"
#include "support/scaled_component.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp {
namespace {

class ForwardReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeConfig config;
    config.output_path = ::testing::TempDir() + "/forward_reuse";
    auto runtime = cpp_kind::MakeRuntime(std::make_shared<const Component>(testing::MakeScaled()), config);
    ASSERT_OK(runtime);
    runtime_ = *std::move(runtime);
  }

  RuntimeResponse Post(const std::string& endpoint, const std::string& body,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    return testing::PostJson(*runtime_, endpoint, body, std::move(headers));
  }

  static std::string Header(const RuntimeResponse& r, const std::string& name) {
    return testing::HeaderOf(r, name);
  }

  std::unique_ptr<Runtime> runtime_;
};

constexpr char kApply[] = R"({"inputs":{"x":[1.0,2.0,3.0]}})";
constexpr char kVjp[] =
    R"({"inputs":{"x":[1.0,2.0,3.0]},"vjp_inputs":["x"],"vjp_outputs":["y"],"cotangent_vector":{"y":[1.0,0.0,-1.0]}})";
constexpr char kJvp[] =
    R"({"inputs":{"x":[1.0,2.0,3.0]},"jvp_inputs":["x"],"jvp_outputs":["y"],"tangent_vector":{"x":[0.5,0.0,1.0]}})";

TEST_F(ForwardReuse, AKeptApplyLetsItsDerivativesRunWithoutSolving) {
  const RuntimeResponse plain = Post("vector_jacobian_product", kVjp);
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(Header(plain, "Tesscpp-Residuals-Used"), "");  // nobody asked

  const int before = testing::ScaledSolves();
  const RuntimeResponse apply = Post("apply", kApply, {{"Tesscpp-Keep", "1"}});
  ASSERT_EQ(apply.status, 200);
  const std::string reference = Header(apply, "Tesscpp-Residuals");
  ASSERT_FALSE(reference.empty());
  const RuntimeResponse vjp = Post("vector_jacobian_product", kVjp, {{"Tesscpp-Residuals", reference}});
  const RuntimeResponse jvp = Post("jacobian_vector_product", kJvp, {{"Tesscpp-Residuals", reference}});
  EXPECT_EQ(testing::ScaledSolves() - before, 1);  // the apply's only
  EXPECT_EQ(Header(vjp, "Tesscpp-Residuals-Used"), "hit");
  EXPECT_EQ(Header(jvp, "Tesscpp-Residuals-Used"), "hit");
  // The same bytes as the call that solved again.
  EXPECT_EQ(vjp.body.string_view(), plain.body.string_view());
  EXPECT_EQ(
      vjp.body.string_view(),
      R"({"x":{"object_type":"array","shape":[3],"dtype":"float64","data":{"buffer":[10.0,-8.0,-26.0],"encoding":"json"}}})");
}

TEST_F(ForwardReuse, ReferencesThatCannotBeHonouredRecompute) {
  const RuntimeResponse apply = Post("apply", kApply, {{"Tesscpp-Keep", "1"}});
  const std::string reference = Header(apply, "Tesscpp-Residuals");
  ASSERT_FALSE(reference.empty());
  const std::string expected(Post("vector_jacobian_product", kVjp).body.string_view());

  // Other inputs: the kept solve is not theirs.
  const std::string elsewhere =
      R"({"inputs":{"x":[1.0,2.0,4.0]},"vjp_inputs":["x"],"vjp_outputs":["y"],"cotangent_vector":{"y":[1.0,0.0,-1.0]}})";
  int before = testing::ScaledSolves();
  const RuntimeResponse other =
      Post("vector_jacobian_product", elsewhere, {{"Tesscpp-Residuals", reference}});
  EXPECT_EQ(Header(other, "Tesscpp-Residuals-Used"), "recomputed: inputs differ");
  EXPECT_EQ(other.body.string_view(), Post("vector_jacobian_product", elsewhere).body.string_view());
  EXPECT_EQ(testing::ScaledSolves() - before, 2);

  for (const std::string& bad : {std::string("garbage"), reference.substr(0, reference.rfind('.')) + ".00",
                                 std::string("1-x.") + reference.substr(reference.rfind('.') + 1)}) {
    const RuntimeResponse r = Post("vector_jacobian_product", kVjp, {{"Tesscpp-Residuals", bad}});
    EXPECT_EQ(r.status, 200) << bad;
    EXPECT_EQ(r.body.string_view(), expected) << bad;
    EXPECT_NE(Header(r, "Tesscpp-Residuals-Used").find("recomputed: "), std::string::npos) << bad;
  }

  // Released with any request: gone.
  Post("apply", R"({"inputs":{"x":[0.0]}})", {{"Tesscpp-Residuals-Release", reference}});
  const RuntimeResponse released = Post("vector_jacobian_product", kVjp, {{"Tesscpp-Residuals", reference}});
  EXPECT_EQ(Header(released, "Tesscpp-Residuals-Used"), "recomputed: unknown");
  EXPECT_EQ(released.body.string_view(), expected);
}

TEST_F(ForwardReuse, NothingIsKeptWithoutBudgets) {
  RuntimeConfig config;
  config.output_path = ::testing::TempDir() + "/forward_reuse_off";
  config.residual_host_mb = 0;
  config.residual_device_mb = 0;
  auto runtime = cpp_kind::MakeRuntime(std::make_shared<const Component>(testing::MakeScaled()), config);
  ASSERT_OK(runtime);
  runtime_ = *std::move(runtime);
  const RuntimeResponse apply = Post("apply", kApply, {{"Tesscpp-Keep", "1"}});
  EXPECT_EQ(apply.status, 200);
  EXPECT_EQ(Header(apply, "Tesscpp-Residuals"), "");
}

}  // namespace
}  // namespace tesscpp
