#include "platform/http_headers.h"

#include <gtest/gtest.h>

namespace tesscpp::platform {
namespace {

TEST(HttpHeaders, NamesMatchWhateverTheirCaseAndTheFirstWins) {
  const HttpHeaders headers = {{"tesseract-exports", "a"}, {"Tesseract-Exports", "b"}, {"X", ""}};
  EXPECT_EQ(FindHeader(headers, "Tesseract-Exports"), "a");
  EXPECT_EQ(FindHeader(headers, "TESSERACT-EXPORTS"), "a");
  EXPECT_EQ(FindHeader(headers, "x"), "");  // present and empty is not absent
  EXPECT_FALSE(FindHeader(headers, "Tesseract-Export").has_value());
  EXPECT_FALSE(FindHeader(headers, "Tesseract-Exports-Done").has_value());
  EXPECT_FALSE(FindHeader({}, "x").has_value());
}

}  // namespace
}  // namespace tesscpp::platform
