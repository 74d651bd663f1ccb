// autodiff_test.cc: Derive keeps endpoints written by hand, derives the rest,
// and refuses outputs that are not differentiable fields.
#include "tesscpp/autodiff.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status_matchers.h"
#include "support/test_tensors.h"

namespace tesscpp {
namespace {

Value Scalar(double v) {
  auto t = *NewTensor<double>({});
  t.second[0] = v;
  return Value(t.first);
}

Component Square() {
  Component c("square", "0.1.0");
  c.inputs().Scalar<double>("x", {.differentiable = true});
  c.outputs().Scalar<double>("y", {.differentiable = true});
  c.outputs().Scalar<double>("label");  // not differentiable
  return c;
}

// y = x * x, generically; `extra` names another output to create.
struct SquareFn {
  std::string extra;
  template <typename T>
  Status operator()(autodiff::Context<T>& ctx) const {
    const T x = ctx.Input("x")[0];
    TESS_ASSIGN_OR_RETURN(std::span<T> y, ctx.Output("y", {}));
    y[0] = x * x;
    if (!extra.empty()) return ctx.Output(extra, {}).status();
    return Status::OK();
  }
};

TEST(Autodiff, KeepsHandWrittenEndpointsAndDerivesTheRest) {
  Component c = Square();
  c.VectorJacobianProduct(
      [](const ModelView&, const PathSet&, const PathSet&, const TensorMap&, TensorMap& vjp) {
        vjp.insert_or_assign("x", Scalar(-42.0).as_tensor());  // recognisably hand-written
        return Status::OK();
      });
  autodiff::Derive(c, SquareFn{});
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  const ModelView in(inputs);
  TensorMap vjp, jvp;
  ASSERT_OK(c.vector_jacobian_product().fn(in, {"x"}, {"y"}, {{"y", Scalar(1.0).as_tensor()}}, vjp));
  EXPECT_EQ(vjp.at("x").data_as<double>()[0], -42.0);
  ASSERT_OK(c.jacobian_vector_product().fn(in, {"x"}, {"y"}, {{"x", Scalar(1.0).as_tensor()}}, jvp));
  EXPECT_EQ(jvp.at("y").data_as<double>()[0], 6.0);  // d(x²)/dx at 3, derived
  JacobianMap jac;
  ASSERT_OK(c.jacobian().fn(in, {"x"}, {"y"}, jac));
  EXPECT_EQ(jac.at("y").at("x").data_as<double>()[0], 6.0);
  Record out;
  ASSERT_OK(c.apply().fn(in, out));
  EXPECT_EQ(std::move(out).Finish().as_dict().at("y").as_tensor().data_as<double>()[0], 9.0);
}

TEST(Autodiff, RefusesOutputsThatAreNotDifferentiable) {
  Component c = Square();
  autodiff::Derive(c, SquareFn{"label"});
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  Record out;
  const Status status = c.apply().fn(ModelView(inputs), out);
  EXPECT_STATUS(status, StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'label' is not a differentiable top-level output"), std::string::npos);
}

TEST(Autodiff, RefusesOutputDimsThatAreNoShape) {
  Component c = Square();
  autodiff::Derive(c, [](auto& ctx) -> Status { return ctx.Output("y", {-1}).status(); });
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  Record out;
  const Status status = c.apply().fn(ModelView(inputs), out);
  EXPECT_STATUS(status, StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("output 'y'"), std::string::npos) << status;
}

TEST(Autodiff, NamesAnInputThatIsNotDifferentiable) {
  Component c = Square();
  autodiff::Derive(
      c, [](auto& ctx) { return ctx.Input("z").empty() ? Status::OK() : Status::Internal("unreachable"); });
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}};
  Record out;
  try {
    (void)c.apply().fn(ModelView(inputs), out);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'z' is not a differentiable top-level input"), std::string::npos);
  }
}

// y = x > 0 ? x^2 : -3x, with k * that for a non-differentiable k.
Component Branchy(double power_of_x = 2) {
  Component c("branchy", "0.1.0");
  c.inputs().Scalar<double>("x", {.differentiable = true});
  auto k = c.inputs().Scalar<double>("k", {.default_value = 1.0});
  c.outputs().Scalar<double>("y", {.differentiable = true});
  autodiff::Derive(c, [=](auto& ctx) -> Status {
    using T = typename std::decay_t<decltype(ctx.Input("x"))>::value_type;
    const T x = ctx.Input("x")[0];
    TESS_ASSIGN_OR_RETURN(auto y, ctx.Output("y", {}));
    T value = x > 0.0 ? T(x * x) : T(-3.0 * x);
    if (power_of_x == 3) value = value * x;
    y[0] = ctx.inputs()[k] * value;
    return Status::OK();
  });
  return c;
}

double Vjp(const Component& c, double x, double k = 1.0) {
  const Value inputs = Value::Dict{{"x", Scalar(x)}, {"k", Scalar(k)}};
  TensorMap vjp;
  const Status status =
      c.vector_jacobian_product().fn(ModelView(inputs), {"x"}, {"y"}, {{"y", Scalar(1.0).as_tensor()}}, vjp);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return status.ok() ? vjp.at("x").data_as<double>()[0] : 0.0;
}

uint64_t Recordings() { return autodiff::internal::ProcessTapeSlot().recordings; }

TEST(Autodiff, ReusesATapeWhileItsBranchesAndConstantsHold) {
  const Component c = Branchy();
  const uint64_t before = Recordings();
  EXPECT_EQ(Vjp(c, 2.0), 4.0);
  EXPECT_EQ(Vjp(c, 3.0), 6.0);  // swept again, not recorded
  EXPECT_EQ(Vjp(c, 0.5), 1.0);
  EXPECT_EQ(Recordings(), before + 1);
  EXPECT_EQ(Vjp(c, -1.0), -3.0);  // the branch goes the other way: recorded again
  EXPECT_EQ(Recordings(), before + 2);
  EXPECT_EQ(Vjp(c, -2.0), -3.0);
  EXPECT_EQ(Vjp(c, 5.0), 10.0);
  EXPECT_EQ(Recordings(), before + 3);
  EXPECT_EQ(Vjp(c, 5.0, 2.0), 20.0);  // a non-differentiable input is a constant of the tape
  EXPECT_EQ(Recordings(), before + 4);
  JacobianMap jac;  // the jacobian goes through the same tapes
  const Value inputs = Value::Dict{{"x", Scalar(-4.0)}, {"k", Scalar(2.0)}};
  ASSERT_OK(c.jacobian().fn(ModelView(inputs), {"x"}, {"y"}, jac));
  EXPECT_EQ(jac.at("y").at("x").data_as<double>()[0], -6.0);
}

TEST(Autodiff, NeverSweepsAnotherComponentsTape) {
  // Same fields, same constants: only which function made the tape differs.
  const Component square = Branchy(2), cube = Branchy(3);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(Vjp(square, 2.0), 4.0) << round;
    EXPECT_EQ(Vjp(cube, 2.0), 12.0) << round;
  }
}

TEST(Autodiff, DerivesAbstractEvalFromTheShapes) {
  Component c("scale", "0.1.0");
  c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  auto k = c.inputs().Scalar<double>("k", {.default_value = 1.0});
  c.outputs().Array<float>("y", {kAnyDim}, {.differentiable = true});
  c.outputs().Scalar<double>("total", {.differentiable = true});
  autodiff::Derive(c, [=](auto& ctx) -> Status {
    const auto x = ctx.Input("x");
    TESS_ASSIGN_OR_RETURN(auto y, ctx.Output("y", {static_cast<int64_t>(x.size())}));
    TESS_ASSIGN_OR_RETURN(auto total, ctx.Output("total", {}));
    for (size_t i = 0; i < x.size(); ++i) {
      y[i] = ctx.inputs()[k] * x[i];
      total[0] += y[i];
    }
    return Status::OK();
  });
  ASSERT_TRUE(c.abstract_eval());
  auto shape_dtype = [](std::vector<int64_t> dims, Dtype dtype) {
    return Record::ShapeDTypeValue({std::move(dims), dtype});
  };
  const Value abstract =
      Value::Dict{{"x", shape_dtype({5}, Dtype::kFloat64)}, {"k", shape_dtype({}, Dtype::kFloat64)}};
  Record out;
  ASSERT_OK(c.abstract_eval().fn(AbstractModelView(abstract), out));
  const Value answer = std::move(out).Finish();
  EXPECT_EQ(answer.as_dict().at("y"), shape_dtype({5}, Dtype::kFloat32));  // the declared dtype
  EXPECT_EQ(answer.as_dict().at("total"), shape_dtype({}, Dtype::kFloat64));
  // Shapes of any size cost the request nothing: the zeros are capped.
  const Value huge = Value::Dict{{"x", shape_dtype({int64_t{1} << 40}, Dtype::kFloat64)},
                                 {"k", shape_dtype({}, Dtype::kFloat64)}};
  Record refused;
  EXPECT_STATUS(c.abstract_eval().fn(AbstractModelView(huge), refused), StatusCode::kResourceExhausted);
}

TEST(Autodiff, AConstantChangedInPlaceIsANewConstant) {
  // An in-process caller's array is borrowed: the kept tape must hold a copy.
  const Component c = Branchy();
  Tensor k = Scalar(2.0).as_tensor();
  const Value inputs = Value::Dict{{"x", Scalar(3.0)}, {"k", Value(k)}};
  auto vjp_at = [&] {
    TensorMap vjp;
    EXPECT_TRUE(c.vector_jacobian_product()
                    .fn(ModelView(inputs), {"x"}, {"y"}, {{"y", Scalar(1.0).as_tensor()}}, vjp)
                    .ok());
    return vjp.at("x").data_as<double>()[0];
  };
  EXPECT_EQ(vjp_at(), 12.0);
  k.data_as<double>()[0] = 5.0;  // the same tensor, changed in place
  EXPECT_EQ(vjp_at(), 30.0);
}

// y = sum over r = 1..kRounds of sin(r x_i): a tape too long for ADOL-C's
// buffers (about 3 operations per term), which it writes to files.
constexpr int kRounds = 200;

Component LongTape() {
  Component c("long_tape", "0.1.0");
  c.inputs().Array<double>("x", {kAnyDim}, {.differentiable = true});
  c.outputs().Scalar<double>("y", {.differentiable = true});
  autodiff::Derive(c, [](auto& ctx) -> Status {
    using T = typename std::decay_t<decltype(ctx.Input("x"))>::value_type;
    using std::sin;
    T total = 0.0;
    for (int r = 1; r <= kRounds; ++r) {
      for (const T& xi : ctx.Input("x")) total += sin(xi * static_cast<double>(r));
    }
    TESS_ASSIGN_OR_RETURN(auto y, ctx.Output("y", {}));
    y[0] = total;
    return Status::OK();
  });
  return c;
}

// Whether LongTape's gradient at x_i = 0.001 i (n of them) is right.
bool LongTapeGradientIsRight(const Component& c, int64_t n) {
  Tensor x = *Tensor::Allocate(Dtype::kFloat64, *Shape::Make({n}));
  for (int64_t i = 0; i < n; ++i) x.data_as<double>()[i] = 0.001 * static_cast<double>(i);
  const Value inputs = Value::Dict{{"x", Value(x)}};
  TensorMap vjp;
  if (!c.vector_jacobian_product()
           .fn(ModelView(inputs), {"x"}, {"y"}, {{"y", Scalar(1.0).as_tensor()}}, vjp)
           .ok())
    return false;
  for (int64_t i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 1; r <= kRounds; ++r) want += r * std::cos(r * 0.001 * static_cast<double>(i));
    if (std::abs(vjp.at("x").data_as<double>()[i] - want) > 1e-9 * (1 + std::abs(want))) return false;
  }
  return true;
}

bool HasTapeFiles(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("ADOLC-", 0) == 0) return true;
  }
  return false;
}

// ADOL-C names the files of a tape too long for its buffers after the tag
// alone, in the working directory by default: two processes started in one
// directory (a server's workers) swept each other's tapes.
TEST(Autodiff, ATapeOnDiskIsItsProcesssOwn) {
  const Component c = LongTape();
  ASSERT_TRUE(LongTapeGradientIsRight(c, 1000));
  ASSERT_OK_AND_ASSIGN(const std::string own, autodiff::internal::ProcessTapeDirectory());
  EXPECT_TRUE(HasTapeFiles(own)) << own;
  EXPECT_FALSE(HasTapeFiles(std::filesystem::current_path()));
  // A forked child at the same point: not a sweep of the parent's tape (its
  // files are the parent's) but a recording of its own, in its own directory,
  // under the tag's successor. It ends with exit(), whose ADOL-C clean-up
  // would remove the files of tapes not recorded to be left to their
  // directory's removal: the parent's among them.
  const std::filesystem::path chosen =
      std::filesystem::path(::testing::TempDir()) / ("tape-dir-" + std::to_string(::getpid()));
  std::filesystem::create_directories(chosen);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("TESSCPP_TAPE_DIR", chosen.c_str(), 1);
    const uint64_t inherited = Recordings();
    bool ok = LongTapeGradientIsRight(c, 1000) && Recordings() > inherited;
    auto dir = autodiff::internal::ProcessTapeDirectory();
    ok = ok && dir.ok() && std::filesystem::path(*dir).parent_path() == chosen && HasTapeFiles(*dir);
    std::exit(ok ? 0 : 1);  // which removes the child's directory
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(std::filesystem::is_empty(chosen));
  // The parent's tape, swept again from its files, still answers right.
  const uint64_t recorded = Recordings();
  EXPECT_TRUE(LongTapeGradientIsRight(c, 1000));
  EXPECT_EQ(Recordings(), recorded);
  std::filesystem::remove_all(chosen);
}

// f = (x0^2 y, x0 x1 y^2): second derivatives with cross terms between inputs.
Component Coupled() {
  Component c("coupled", "0.1.0");
  c.inputs().Array<double>("x", {2}, {.differentiable = true});
  c.inputs().Scalar<double>("y", {.differentiable = true});
  c.outputs().Array<double>("f", {2}, {.differentiable = true});
  autodiff::Derive(c, [](auto& ctx) -> Status {
    const auto x = ctx.Input("x");
    const auto y = ctx.Input("y")[0];
    TESS_ASSIGN_OR_RETURN(auto f, ctx.Output("f", {2}));
    f[0] = x[0] * x[0] * y;
    f[1] = x[0] * x[1] * y * y;
    return Status::OK();
  });
  return c;
}

using testing::Vector;

TEST(Autodiff, DerivesHessianVectorProductsForwardOverReverse) {
  const Component c = Coupled();
  ASSERT_TRUE(c.hessian_vector_product());
  EXPECT_NE(c.hessian_vector_product().doc.find("lagra_hess_vec"), std::string::npos);
  const double x0 = 1.5, x1 = -0.5, y = 2.0, u0 = 0.7, u1 = -1.3, v0 = 0.2, v1 = 0.9, vy = -0.4;
  const Value inputs = Value::Dict{{"x", Value(Vector({x0, x1}))}, {"y", Scalar(y)}};
  const TensorMap cotangent{{"f", Vector({u0, u1})}};
  TensorMap hvp;
  ASSERT_OK(c.hessian_vector_product().fn(ModelView(inputs), {"x", "y"}, {"f"},
                                          {{"x", Vector({v0, v1})}, {"y", Scalar(vy).as_tensor()}}, cotangent,
                                          hvp));
  // The Hessian of u . f over (x0, x1, y), times (v0, v1, vy).
  const double hx0y = 2 * u0 * x0 + 2 * u1 * x1 * y;
  EXPECT_NEAR(hvp.at("x").data_as<double>()[0], 2 * u0 * y * v0 + u1 * y * y * v1 + hx0y * vy, 1e-12);
  EXPECT_NEAR(hvp.at("x").data_as<double>()[1], u1 * y * y * v0 + 2 * u1 * x0 * y * vy, 1e-12);
  EXPECT_NEAR(hvp.at("y").data_as<double>()[0], hx0y * v0 + 2 * u1 * x0 * y * v1 + 2 * u1 * x0 * x1 * vy,
              1e-12);
  // y held fixed: only the x block of the Hessian.
  TensorMap on_x;
  ASSERT_OK(c.hessian_vector_product().fn(ModelView(inputs), {"x"}, {"f"}, {{"x", Vector({v0, v1})}},
                                          cotangent, on_x));
  EXPECT_EQ(on_x.size(), 1u);
  EXPECT_NEAR(on_x.at("x").data_as<double>()[0], 2 * u0 * y * v0 + u1 * y * y * v1, 1e-12);
  EXPECT_NEAR(on_x.at("x").data_as<double>()[1], u1 * y * y * v0, 1e-12);
  // A VJP after it sweeps the tape again: the right gradient, not the HVP's Taylors.
  TensorMap vjp;
  ASSERT_OK(c.vector_jacobian_product().fn(ModelView(inputs), {"y"}, {"f"}, cotangent, vjp));
  EXPECT_NEAR(vjp.at("y").data_as<double>()[0], u0 * x0 * x0 + u1 * x0 * x1 * 2 * y, 1e-12);
}

}  // namespace
}  // namespace tesscpp
