// Forward reuse end to end over HTTP (docs/forward-reuse.md): tesscpp's C++
// client asks an apply to keep, refers its VJP to it, releases it, and is
// refused a reference that could inject a header. The server is the
// unchanged runtime and HTTP server, in this process, serving a hand-written
// component that counts its forward solves.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "core/status_matchers.h"
#include "support/scaled_component.h"
#include "support/served_in_thread.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/cpp_kind/cpp_kind.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp {
namespace {

class ForwardReuseOverHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeConfig config;
    config.output_path = ::testing::TempDir() + "/forward_reuse_http";
    auto runtime = cpp_kind::MakeRuntime(std::make_shared<const Component>(testing::MakeScaled()), config);
    ASSERT_OK(runtime);
    auto served = testing::ServedInThread::Start(*std::move(runtime));
    ASSERT_OK(served);
    served_ = *std::move(served);
    auto tesseract = Tesseract::FromUrl(served_->url());
    ASSERT_OK(tesseract);
    tesseract_ = std::make_unique<Tesseract>(*std::move(tesseract));
  }
  void TearDown() override { tesseract_.reset(); }

  static Value Body(const std::string& json) { return *ReadJson(json); }

  std::unique_ptr<testing::ServedInThread> served_;
  std::unique_ptr<Tesseract> tesseract_;
};

const char* kApply = R"({"inputs":{"x":[1.0,2.0,3.0]}})";
const char* kVjp =
    R"({"inputs":{"x":[1.0,2.0,3.0]},"vjp_inputs":["x"],"vjp_outputs":["y"],"cotangent_vector":{"y":[1.0,0.0,-1.0]}})";

TEST_F(ForwardReuseOverHttp, AStepCostsOneSolve) {
  const Value vjp_body = Body(kVjp);
  auto recomputed = tesseract_->Call("vector_jacobian_product", vjp_body);
  ASSERT_OK(recomputed);

  const int before = testing::ScaledSolves();
  ForwardReuse keep;
  keep.keep = true;
  ASSERT_OK(tesseract_->Call("apply", Body(kApply), std::nullopt, &keep));
  ASSERT_FALSE(keep.residuals.empty());
  ForwardReuse refer;
  refer.residuals = keep.residuals;
  auto vjp = tesseract_->Call("vector_jacobian_product", vjp_body, std::nullopt, &refer);
  ASSERT_OK(vjp);
  EXPECT_EQ(refer.used, "hit");
  EXPECT_EQ(testing::ScaledSolves() - before, 1);
  EXPECT_EQ(*vjp, *recomputed);

  // Released with the next call: the reference then recomputes.
  ForwardReuse done;
  done.release = {keep.residuals};
  ASSERT_OK(tesseract_->Call("apply", Body(R"({"inputs":{"x":[0.0]}})"), std::nullopt, &done));
  ForwardReuse stale;
  stale.residuals = keep.residuals;
  auto again = tesseract_->Call("vector_jacobian_product", vjp_body, std::nullopt, &stale);
  ASSERT_OK(again);
  EXPECT_EQ(stale.used, "recomputed: unknown");
  EXPECT_EQ(*again, *recomputed);
}

TEST_F(ForwardReuseOverHttp, NeverSendsAReferenceThatIsNoToken) {
  // It could inject a header: not sent, and the call recomputes as one that
  // names no reference (no answer header says how it was used).
  ForwardReuse injected;
  injected.residuals = "1-ab.cd\r\nX-Evil: 1";
  injected.release = {"x\r\nX-Evil: 2"};
  const auto answered = tesseract_->Call("vector_jacobian_product", Body(kVjp), std::nullopt, &injected);
  ASSERT_OK(answered);
  EXPECT_EQ(injected.used, "");
  EXPECT_EQ(*answered, *tesseract_->Call("vector_jacobian_product", Body(kVjp)));
}

}  // namespace
}  // namespace tesscpp
