// The loader's refusals: each names the file and what is wrong with it.
#include "tesscpp/internal/loader/component_library.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "core/status_matchers.h"
#include "tesscpp/component.h"

namespace tesscpp {
namespace {

std::string Example(const std::string& name) {
  return std::string(TESS_EXAMPLES_DIR) + "/lib" + name + ".so";
}

TEST(ComponentLibrary, OpensAComponentAndKeepsItsName) {
  ASSERT_OK_AND_ASSIGN(auto library, ComponentLibrary::Open(Example("vectoradd")));
  EXPECT_EQ(library->component().name(), "vectoradd");
  EXPECT_EQ(library->path(), Example("vectoradd"));
}

TEST(ComponentLibrary, AMissingFileIsNotFoundAndNamed) {
  const auto missing = ComponentLibrary::Open(Example("no_such_component"));
  EXPECT_STATUS(missing, StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("libno_such_component.so"), std::string::npos)
      << missing.status();
}

TEST(ComponentLibrary, ASharedObjectWithoutTheEntryPointIsRefused) {
  // libtesscpp.so itself loads fine but declares no component.
  const auto not_a_component = ComponentLibrary::Open(TESS_LIBTESSCPP);
  EXPECT_STATUS(not_a_component, StatusCode::kNotFound);
  EXPECT_NE(not_a_component.status().message().find("is not a tesscpp component library"), std::string::npos)
      << not_a_component.status();
}

TEST(ComponentLibrary, AFileThatIsNoSharedObjectIsRefused) {
  EXPECT_STATUS(ComponentLibrary::Open(std::string(TESS_SOURCE_DIR) + "/README.md"), StatusCode::kNotFound);
}

#ifdef TESS_AUTODIFF_EXAMPLES
// Two component libraries built from tesscpp/autodiff.h each have their own
// copies of its statics, but ADOL-C's tapes are one per process: taping from
// both at once is only safe under the lock they share in libtesscpp
// (tesscpp/autodiff/detail/tape.h). The VJPs are called directly, without the
// Runtime, whose output capture would serialise the calls anyway.
TEST(ComponentLibrary, TwoAutodiffLibrariesTapeUnderOneLock) {
  ASSERT_OK_AND_ASSIGN(auto rosenbrock, ComponentLibrary::Open(Example("rosenbrock_ad")));
  ASSERT_OK_AND_ASSIGN(auto burgers, ComponentLibrary::Open(Example("burgers_ad")));
  const auto scalar32 = [](float v) {
    auto t = *NewTensor<float>({});
    t.second[0] = v;
    return t.first;
  };
  const auto scalar64 = [](double v) {
    auto t = *NewTensor<double>({});
    t.second[0] = v;
    return t.first;
  };
  const auto vector64 = [](int64_t n, double scale) {
    auto t = *NewTensor<double>({n});
    for (int64_t i = 0; i < n; ++i) t.second[i] = scale * std::sin(0.1 * static_cast<double>(i));
    return t.first;
  };
  auto steps = NewTensor<int64_t>({})->first;
  steps.data_as<int64_t>()[0] = 40;
  // Call i: the gradient of one library's output at a point of its own.
  const auto vjp = [&](int i) -> std::vector<double> {
    TensorMap out;
    if (i % 2 == 1) {
      const Value in = Value::Dict{{"x", Value(scalar32(0.1f * i - 1))},
                                   {"y", Value(scalar32(0.05f * i))},
                                   {"a", Value(scalar32(1))},
                                   {"b", Value(scalar32(10.0f + i))}};
      EXPECT_OK(rosenbrock->component().vector_jacobian_product().fn(ModelView(in), {"x", "y"}, {"result"},
                                                                     {{"result", scalar32(1)}}, out));
      return {out.at("x").data_as<float>()[0], out.at("y").data_as<float>()[0]};
    }
    // Every input given: defaults are filled in by the Runtime's validation, not here.
    const Value in = Value::Dict{{"u", Value(vector64(64, 1 + 0.01 * i))},
                                 {"nu", Value(scalar64(0.05))},
                                 {"dt", Value(scalar64(1e-4))},
                                 {"dx", Value(scalar64(1e-2))},
                                 {"steps", Value(steps)}};
    EXPECT_OK(burgers->component().vector_jacobian_product().fn(ModelView(in), {"u"}, {"u_next"},
                                                                {{"u_next", vector64(64, 1.0)}}, out));
    const double* g = out.at("u").data_as<double>();
    return {g, g + 64};
  };
  constexpr int kCalls = 96;
  std::vector<std::vector<double>> alone(kCalls), together(kCalls);
  for (int i = 0; i < kCalls; ++i) alone[i] = vjp(i);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kCalls; i += 8) together[i] = vjp(i);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(together[i], alone[i]) << "call " << i;
}
#endif

}  // namespace
}  // namespace tesscpp
