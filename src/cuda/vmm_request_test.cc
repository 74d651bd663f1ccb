// vmm_request_test.cc: the cuda_vmm endpoint's request line (no GPU needed).
#include "cuda/vmm_request.h"

#include <gtest/gtest.h>

#include <string>

#include "core/status_matchers.h"

namespace tesscpp::cuda::internal {
namespace {

constexpr std::string_view kToken = "00112233445566778899aabbccddeeff";

TEST(VmmRequest, NamesBlocksInOrder) {
  auto blocks = ParseVmmRequest(std::string(kToken) + " 907,909,18446744073709551615", kToken);
  ASSERT_OK(blocks);
  EXPECT_EQ(*blocks, (std::vector<uint64_t>{907, 909, 18446744073709551615ULL}));
}

TEST(VmmRequest, RefusesWhatIsNotAListOfIdsUnderTheToken) {
  const std::string t(kToken);
  std::string too_many = t + " 1";
  for (size_t i = 1; i <= kMaxVmmRequestBlocks; ++i) too_many += ",1";
  for (const std::string& bad : {
           std::string(),                                      // nothing
           t,                                                  // no list
           t + " ",                                            // an empty list
           t + " 1,",                                          // a trailing comma
           t + " 1,,2",                                        // an empty id
           t + " -1",                                          // a sign
           t + " 1 2",                                         // a space
           t + " 18446744073709551616",                        // beyond 64 bits
           t + " 0x10",                                        // not decimal
           std::string("ffffffffffffffffffffffffffffffff 1"),  // another token
           " " + t + " 1",                                     // a leading space
           too_many,
       }) {
    EXPECT_STATUS(ParseVmmRequest(bad, kToken).status(), StatusCode::kInvalidArgument) << bad.substr(0, 80);
  }
}

}  // namespace
}  // namespace tesscpp::cuda::internal
