#include "tesscpp/dtype.h"
#include "core/status_matchers.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tesscpp {
namespace {

TEST(Dtype, NamesRoundTrip) {
  for (Dtype d : kAllDtypes) {
    auto parsed = DtypeFromName(DtypeName(d));
    ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, d);
  }
}

TEST(Dtype, UnknownNameIsValidationErrorListingAllowed) {
  for (const char* name : {"float8", "bfloat16", "<f4", "Float32", "", "object"}) {
    auto r = DtypeFromName(name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_STATUS(r, StatusCode::kValidationError);
    EXPECT_NE(r.status().message().find(std::string("'") + name + "'"), std::string::npos);
    EXPECT_NE(r.status().message().find("complex128"), std::string::npos);
  }
}

TEST(Dtype, ItemSizes) {
  EXPECT_EQ(ItemSize(Dtype::kBool), 1);
  EXPECT_EQ(ItemSize(Dtype::kFloat16), 2);
  EXPECT_EQ(ItemSize(Dtype::kUInt32), 4);
  EXPECT_EQ(ItemSize(Dtype::kComplex64), 8);
  EXPECT_EQ(ItemSize(Dtype::kComplex128), 16);
}

TEST(Dtype, DlpackRoundTrip) {
  EXPECT_EQ(ToDlpack(Dtype::kFloat32), (DlpackDtype{2, 32, 1}));
  EXPECT_EQ(ToDlpack(Dtype::kBool), (DlpackDtype{6, 8, 1}));
  EXPECT_EQ(ToDlpack(Dtype::kComplex128), (DlpackDtype{5, 128, 1}));
  for (Dtype d : kAllDtypes) EXPECT_EQ(*DtypeFromDlpack(ToDlpack(d)), d);
  EXPECT_EQ(DtypeFromDlpack({4, 16, 1}).status().code(), StatusCode::kUnimplemented);  // bfloat16
  EXPECT_FALSE(DtypeFromDlpack({2, 32, 4}).ok());
}

// tests/data/golden/dtype_casts.txt is numpy's can_cast table for every pair,
// written by tests/golden/generate.py: "<casting> <from> <to...>".
TEST(Dtype, CastingMatchesNumpy) {
  std::ifstream in(TESS_SOURCE_DIR "/tests/data/golden/dtype_casts.txt");
  ASSERT_TRUE(in) << "golden file missing";
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string casting, from_name, to_name;
    words >> casting >> from_name;
    const Dtype from = *DtypeFromName(from_name);
    std::vector<bool> allowed(kAllDtypes.size(), false);
    while (words >> to_name) allowed[static_cast<size_t>(*DtypeFromName(to_name))] = true;
    for (Dtype to : kAllDtypes) {
      const bool ours = casting == "safe" ? CanCastSafe(from, to) : CanCastSameKind(from, to);
      EXPECT_EQ(ours, allowed[static_cast<size_t>(to)])
          << casting << " " << from_name << " -> " << DtypeName(to);
    }
    ++rows;
  }
  EXPECT_EQ(rows, 28);
}

}  // namespace
}  // namespace tesscpp
