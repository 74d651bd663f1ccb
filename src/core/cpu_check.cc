// cpu_check.cc: compiled for baseline x86-64 (see CMakeLists.txt), so that it
// can run, and speak, on a CPU that lacks what the rest was compiled for.
#include "core/cpu_check.h"

#include <unistd.h>

#ifndef TESS_CPU_FEATURES
#define TESS_CPU_FEATURES ""
#endif

namespace tesscpp::core {

const char* RequiredCpuFeatures() { return TESS_CPU_FEATURES; }

std::string MissingCpuFeatures(std::string_view required, bool (*has)(std::string_view feature)) {
  std::string missing;
  while (!required.empty()) {
    const size_t space = required.find(' ');
    const std::string_view feature = required.substr(0, space);
    if (!feature.empty() && !has(feature)) missing += (missing.empty() ? "" : " ") + std::string(feature);
    required = space == std::string_view::npos ? std::string_view() : required.substr(space + 1);
  }
  return missing;
}

bool CpuHas(std::string_view feature) {
  __builtin_cpu_init();  // constructors may run before libgcc's own
  // __builtin_cpu_supports takes only string literals, and clang 14 knows
  // neither f16c, lzcnt nor movbe (every CPU with AVX2 and BMI2 has them).
  if (feature == "avx") return __builtin_cpu_supports("avx") != 0;
  if (feature == "avx2") return __builtin_cpu_supports("avx2") != 0;
  if (feature == "bmi") return __builtin_cpu_supports("bmi") != 0;
  if (feature == "bmi2") return __builtin_cpu_supports("bmi2") != 0;
  if (feature == "fma") return __builtin_cpu_supports("fma") != 0;
  if (feature == "pclmul") return __builtin_cpu_supports("pclmul") != 0;
  return false;
}

namespace {

#ifdef TESS_CPU_ARCH
// Priority 101: before every other constructor of the object it is linked
// into (libtesscpp.so, or a test binary), some of which use AVX2.
__attribute__((constructor(101))) void RefuseMissingCpuFeatures() {
  const std::string missing = MissingCpuFeatures(RequiredCpuFeatures(), CpuHas);
  if (missing.empty()) return;
  const std::string message = "tesscpp: this build needs a CPU with " TESS_CPU_FEATURES
                              " (-march=" TESS_CPU_ARCH "); this one lacks: " +
                              missing + ". Rebuild with -DTESS_ARCH=x86-64 to run on it.\n";
  (void)!::write(2, message.data(), message.size());
  ::_exit(70);  // EX_SOFTWARE; no atexit handlers: nothing else is safe to run
}
#endif

}  // namespace
}  // namespace tesscpp::core
