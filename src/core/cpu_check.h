// cpu_check.h: the instructions this build needs, checked before any runs
// (internal). Built for x86-64-v3 (TESS_ARCH, the default), the library uses
// AVX2, BMI2 and FMA everywhere the compiler sees fit; on an older CPU it
// would die of SIGILL at its first use. A constructor that runs when
// libtesscpp.so is loaded says what is missing and exits instead.
#pragma once

#include <string>
#include <string_view>

namespace tesscpp::core {

/// \brief The names in `required` (space-separated, as in TESS_CPU_FEATURES)
/// that `has` denies, space-separated; empty when the CPU has them all.
std::string MissingCpuFeatures(std::string_view required, bool (*has)(std::string_view feature));

/// \brief What this build needs (space-separated; empty when the build
/// targets baseline x86-64 and needs nothing more).
const char* RequiredCpuFeatures();

/// \brief Whether this CPU has `feature` (a name __builtin_cpu_supports
/// knows: "avx2", "bmi2", "fma", "pclmul", ...); false for unknown names.
bool CpuHas(std::string_view feature);

}  // namespace tesscpp::core
