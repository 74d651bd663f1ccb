#include "tesscpp/gradient_check.h"

#include <gtest/gtest.h>

#include "core/status_matchers.h"
#include "tesscpp/internal/codec/json.h"

namespace tesscpp {
namespace {

const std::string kExamples = TESS_EXAMPLES_DIR;  // NOLINT(cert-err58-cpp): test constants
const std::string kFixtures =                     // NOLINT(cert-err58-cpp)
    std::string(TESS_SOURCE_DIR) + "/tests/fixtures/python";

Value Payload(std::string_view json) {
  auto value = ReadJson(json);
  EXPECT_OK(value);
  return *value;
}

Value Rosenbrock() { return Payload(R"({"inputs": {"x": 1.5, "y": 2.0}})"); }

TEST(CheckGradients, RightDerivativesPassEveryEndpoint) {
  auto t = Tesseract::FromLibrary(kExamples + "/libunivariate.so");
  ASSERT_OK(t);
  auto results = CheckGradients(*t, Rosenbrock(), {});
  ASSERT_OK(results);
  ASSERT_EQ(results->size(), 3U);
  const char* endpoints[] = {"jacobian", "jacobian_vector_product", "vector_jacobian_product"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*results)[i].endpoint, endpoints[i]);
    EXPECT_EQ((*results)[i].checks, 2);  // x and y, one index each, one output
    EXPECT_TRUE((*results)[i].passed());
  }
}

TEST(CheckGradients, SamplesArraysBySizeAndHonoursTheSelection) {
  auto t = Tesseract::FromLibrary(kExamples + "/libvectoradd.so");
  ASSERT_OK(t);
  GradientCheckOptions options;
  options.max_evals = 7;
  options.seed = 3;
  const Value payload = Payload(R"({"inputs": {"a": [1, 2, 3], "b": [4, 5, 6], "s": 2.0}})");
  auto results = CheckGradients(*t, payload, options);
  ASSERT_OK(results);
  ASSERT_EQ(results->size(), 1U);              // vectoradd has a jacobian only
  EXPECT_EQ((*results)[0].checks, 3 + 3 + 1);  // 7 * 3/7 for a and b, one for the scalar s
  EXPECT_TRUE((*results)[0].passed());
  options.input_paths = {"b"};
  results = CheckGradients(*t, payload, options);
  ASSERT_OK(results);
  EXPECT_EQ((*results)[0].checks, 7);
}

TEST(CheckGradients, AWrongVjpFailsNamingItsPath) {
  SourceOptions options;
  options.python_executable = TESS_VENV_PYTHON;
  auto t = Tesseract::FromSource(kFixtures + "/wrong_vjp/tesseract_api.py", options);
  ASSERT_OK(t);
  auto results = CheckGradients(*t, Rosenbrock(), {});
  ASSERT_OK(results);
  ASSERT_EQ(results->size(), 2U);
  EXPECT_TRUE((*results)[0].passed()) << "the jacobian is right";
  const EndpointCheck& vjp = (*results)[1];
  EXPECT_EQ(vjp.endpoint, "vector_jacobian_product");
  ASSERT_EQ(vjp.failures.size(), 1U);
  const GradientCheckFailure& f = vjp.failures[0];
  EXPECT_EQ(f.input_path, "y");
  EXPECT_EQ(f.output_path, "result");
  EXPECT_TRUE(f.index.empty());
  ASSERT_EQ(f.endpoint.size(), 1U);
  EXPECT_EQ(f.endpoint[0], -100.0);  // 2 * 100 * (y - x^2), doubled
  EXPECT_NEAR(f.finite_difference[0], -50.0, 0.1);
}

TEST(CheckGradients, ANonSymmetricJacobianIsReadTheRightWayRound) {
  // y = A x with a 2x3 A: transposing the jacobian or the VJP's reading, or
  // swapping input and output indices, would fail these right derivatives.
  SourceOptions options;
  options.python_executable = TESS_VENV_PYTHON;
  auto t = Tesseract::FromSource(kFixtures + "/matvec/tesseract_api.py", options);
  ASSERT_OK(t);
  GradientCheckOptions check;
  check.seed = 7;
  check.max_evals = 9;
  auto results = CheckGradients(*t, Payload(R"({"inputs": {"x": [0.5, -1.0, 2.0]}})"), check);
  ASSERT_OK(results);
  ASSERT_EQ(results->size(), 3U);
  for (const EndpointCheck& r : *results) {
    EXPECT_EQ(r.checks, 9) << r.endpoint;
    EXPECT_TRUE(r.passed()) << r.endpoint << ": " << r.failures.size() << " failures";
  }
}

TEST(CheckGradients, BadRequestsAreErrorsNamingWhatIsWrong) {
  auto t = Tesseract::FromLibrary(kExamples + "/libunivariate.so");
  ASSERT_OK(t);
  const auto message = [&](const Value& payload, const GradientCheckOptions& options) {
    auto results = CheckGradients(*t, payload, options);
    EXPECT_STATUS(results, StatusCode::kInvalidArgument);
    return results.status().message();
  };
  EXPECT_NE(message(Payload(R"({"x": 1})"), {}).find("{\"inputs\""), std::string::npos);
  GradientCheckOptions unknown;
  unknown.input_paths = {"z"};
  EXPECT_NE(message(Rosenbrock(), unknown).find("input path z is not among"), std::string::npos);
  GradientCheckOptions not_derivative;
  not_derivative.endpoints = {"apply"};
  EXPECT_NE(message(Rosenbrock(), not_derivative).find("not a derivative endpoint"), std::string::npos);
  GradientCheckOptions step;
  step.eps_for = {{"a", 1e-3}};  // a is not differentiable
  EXPECT_NE(message(Rosenbrock(), step).find("eps_for names input path a"), std::string::npos);
  auto no_derivatives = Tesseract::FromLibrary(kExamples + "/libnoop.so");
  ASSERT_OK(no_derivatives);
  EXPECT_EQ(CheckGradients(*no_derivatives, Payload(R"({"inputs": {"x": [1.0]}})"), {}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tesscpp
