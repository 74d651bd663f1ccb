// Every installed header (include/tesscpp/*.h and include/tesscpp/autodiff/)
// compiles on its own and together, with only the standard library and other
// installed headers: none reaches into include/tesscpp/internal/, which is not
// installed. Exceptions by design: the derived-derivative forms, autodiff.h
// and autodiff_arrays.h with the headers of tesscpp/autodiff/ that only they
// include, which bring their AD libraries (ADOL-C and Sacado; Dr.Jit, and
// dlfcn.h to keep it loaded) to the components that include them, and are not
// part of tesscpp.h. The in-tree
// headers of internal/ may include installed and internal ones, never src/.
#include "tesscpp/tesscpp.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace tesscpp {
namespace {

// The includes of every header in `folder`; `internal_allowed` says whether
// it may use include/tesscpp/internal/.
int CheckIncludes(const std::string& folder, bool internal_allowed) {
  const std::regex include_line(R"(^#include\s+([<"])([^>"]+)[>"])");
  int headers = 0;
  // internal/ holds a folder per layer; the installed headers are the files of include/tesscpp/.
  std::vector<std::filesystem::directory_entry> entries;
  if (internal_allowed) {
    entries.assign(std::filesystem::recursive_directory_iterator(folder), {});
  } else {
    entries.assign(std::filesystem::directory_iterator(folder), {});
    // The derived-derivative forms' own folder is installed too.
    for (const auto& autodiff : std::filesystem::recursive_directory_iterator(folder + "/autodiff")) {
      entries.push_back(autodiff);
    }
  }
  for (const auto& entry : entries) {
    if (!entry.is_regular_file()) continue;
    const std::string header = entry.path().filename().string();
    std::ifstream in(entry.path());
    EXPECT_TRUE(in) << header;
    ++headers;
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string path = m[2];
      const bool std_header =
          m[1] == "<" && path.find('/') == std::string::npos && path.find('.') == std::string::npos;
      const bool internal = path.rfind("tesscpp/internal/", 0) == 0;
      const bool ours = m[1] == "\"" && path.rfind("tesscpp/", 0) == 0 && (internal_allowed || !internal);
      const bool ad_library =
          entry.path().parent_path().string().find("/tesscpp/autodiff") != std::string::npos &&
          (path == "Sacado_No_Kokkos.hpp" || path == "adolc/adolc.h" || path.rfind("drjit/", 0) == 0 ||
           path == "dlfcn.h");
      EXPECT_TRUE(std_header || ours || ad_library) << folder << "/" << header << " includes " << path;
    }
  }
  return headers;
}

TEST(PublicHeaders, InstalledOnesIncludeOnlyStdAndInstalled) {
  EXPECT_GE(CheckIncludes(std::string(TESS_SOURCE_DIR) + "/include/tesscpp", false), 15);
}

TEST(PublicHeaders, InternalOnesIncludeOnlyStdAndTesscpp) {
  EXPECT_GE(CheckIncludes(std::string(TESS_SOURCE_DIR) + "/include/tesscpp/internal", true), 15);
}

}  // namespace
}  // namespace tesscpp
