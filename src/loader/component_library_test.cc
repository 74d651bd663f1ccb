// The loader's refusals: each names the file and what is wrong with it.
#include "tesscpp/component_library.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace tesscpp
