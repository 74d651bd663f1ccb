#include "tesscpp/internal/core/component_kind.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tesscpp::core {
namespace {

namespace fs = std::filesystem;

TEST(ComponentKind, FilesByTheirSuffix) {
  EXPECT_EQ(ComponentKindOf("x/tesseract_api.py"), ComponentKind::kPythonModule);
  EXPECT_EQ(ComponentKindOf("libvectoradd.so"), ComponentKind::kLibrary);
  EXPECT_EQ(ComponentKindOf("/opt/libvectoradd.so.1.2"), ComponentKind::kLibrary);
  EXPECT_EQ(ComponentKindOf("vectoradd.json"), ComponentKind::kUnknown);
  EXPECT_EQ(ComponentKindOf("module.pyc"), ComponentKind::kUnknown);
}

TEST(ComponentKind, DirectoriesByWhetherTheyHoldTesseractApiPy) {
  const fs::path dir =
      fs::temp_directory_path() / "tesscpp_component_kind_test.so";  // a suffix that must not win
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(ComponentKindOf(dir.string()), ComponentKind::kCppProject);
  std::ofstream(dir / "tesseract_api.py") << "\n";
  EXPECT_EQ(ComponentKindOf(dir.string()), ComponentKind::kPythonProject);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tesscpp::core
