// Every public header compiles on its own and together, with only the standard
// library and other public headers (DESIGN.md: no Boost, simdjson, curl, CUDA or
// nanobind in include/tesscpp/).
#include "tesscpp/tesscpp.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace tesscpp {
namespace {

TEST(PublicHeaders, IncludeOnlyStdAndTesscpp) {
  const char* headers[] = {"buffer.h", "buffer_pool.h", "device.h",   "dtype.h", "encoding.h",
                           "json.h",   "path.h",        "result.h",   "shape.h", "status.h",
                           "tensor.h", "tesscpp.h",     "type_fwd.h", "value.h"};
  const std::regex include_line(R"(^#include\s+([<"])([^>"]+)[>"])");
  for (const char* header : headers) {
    std::ifstream in(std::string(TESS_SOURCE_DIR) + "/include/tesscpp/" + header);
    ASSERT_TRUE(in) << header;
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string path = m[2];
      const bool std_header =
          m[1] == "<" && path.find('/') == std::string::npos && path.find('.') == std::string::npos;
      const bool ours = m[1] == "\"" && path.rfind("tesscpp/", 0) == 0;
      EXPECT_TRUE(std_header || ours) << header << " includes " << path;
    }
  }
}

}  // namespace
}  // namespace tesscpp
