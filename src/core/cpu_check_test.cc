#include "core/cpu_check.h"

#include <gtest/gtest.h>

namespace tesscpp::core {
namespace {

bool OnlyAvx(std::string_view feature) { return feature == "avx"; }

TEST(CpuCheck, NamesWhatIsMissingInOrder) {
  EXPECT_EQ(MissingCpuFeatures("avx avx2 bmi2", OnlyAvx), "avx2 bmi2");
  EXPECT_EQ(MissingCpuFeatures("avx", OnlyAvx), "");
  EXPECT_EQ(MissingCpuFeatures("", OnlyAvx), "");
  EXPECT_EQ(MissingCpuFeatures(" avx  fma ", OnlyAvx), "fma");
}

TEST(CpuCheck, ThisMachineHasWhatTheBuildNeeds) {
  EXPECT_EQ(MissingCpuFeatures(RequiredCpuFeatures(), CpuHas), "");
  EXPECT_FALSE(CpuHas("no-such-feature"));
}

}  // namespace
}  // namespace tesscpp::core
