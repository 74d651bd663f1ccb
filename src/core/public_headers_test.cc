// Every public header compiles on its own and together, with only the standard
// library and other public headers. One exception by design: autodiff.h, the
// optional header that brings its AD libraries (ADOL-C, Sacado) to the
// components that include it, and is not part of tesscpp.h.
#include "tesscpp/tesscpp.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace tesscpp {
namespace {

TEST(PublicHeaders, IncludeOnlyStdAndTesscpp) {
  const std::regex include_line(R"(^#include\s+([<"])([^>"]+)[>"])");
  int headers = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TESS_SOURCE_DIR) + "/include/tesscpp")) {
    const std::string header = entry.path().filename().string();
    std::ifstream in(entry.path());
    ASSERT_TRUE(in) << header;
    ++headers;
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string path = m[2];
      const bool std_header =
          m[1] == "<" && path.find('/') == std::string::npos && path.find('.') == std::string::npos;
      const bool ours = m[1] == "\"" && path.rfind("tesscpp/", 0) == 0;
      const bool ad_library =
          header == "autodiff.h" && (path == "Sacado_No_Kokkos.hpp" || path == "adolc/adolc.h");
      EXPECT_TRUE(std_header || ours || ad_library) << header << " includes " << path;
    }
  }
  EXPECT_GE(headers, 15);
}

}  // namespace
}  // namespace tesscpp
