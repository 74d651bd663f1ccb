// Fuzz target: the request line a cuda_vmm endpoint reads from any local
// process (src/cuda/vmm_request.h). Whatever it accepts must print back to a
// line that parses to the same list (the parse loses nothing and invents
// nothing), and the printed line may differ from the input only by leading
// zeros, the one other spelling std::from_chars accepts.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cuda/vmm_request.h"

namespace {

// `s` without the leading zeros of each decimal number in it ("007" -> "7", "0" stays).
std::string WithoutLeadingZeros(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool starts_number = i == 0 || s[i - 1] < '0' || s[i - 1] > '9';
    if (starts_number && s[i] == '0' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') {
      size_t j = i;
      while (j + 1 < s.size() && s[j] == '0' && s[j + 1] >= '0' && s[j + 1] <= '9') ++j;
      i = j;
    }
    out += s[i];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace internal = tesscpp::cuda::internal;
  const std::string_view request(reinterpret_cast<const char*>(data), size);
  const std::string_view token = "00112233445566778899aabbccddeeff";
  auto blocks = internal::ParseVmmRequest(request, token);
  if (!blocks.ok()) return 0;
  if (blocks->empty() || blocks->size() > internal::kMaxVmmRequestBlocks) std::abort();
  std::string printed(token);
  for (size_t i = 0; i < blocks->size(); ++i) printed += (i == 0 ? " " : ",") + std::to_string((*blocks)[i]);
  auto again = internal::ParseVmmRequest(printed, token);
  if (!again.ok() || *again != *blocks) std::abort();
  // The token is compared whole, so only the list after it can be spelled otherwise.
  const std::string_view listed = request.substr(token.size() + 1);
  if (WithoutLeadingZeros(listed) != std::string_view(printed).substr(token.size() + 1)) std::abort();
  return 0;
}
