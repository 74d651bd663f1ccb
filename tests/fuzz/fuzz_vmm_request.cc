// Fuzz target: the request line a cuda_vmm endpoint reads from any local
// process (src/cuda/vmm_request.h). Whatever it accepts must print back to the
// same list.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cuda/vmm_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view request(reinterpret_cast<const char*>(data), size);
  const std::string_view token = "00112233445566778899aabbccddeeff";
  auto blocks = tesscpp::cuda::internal::ParseVmmRequest(request, token);
  if (!blocks.ok()) return 0;
  if (blocks->empty() || blocks->size() > tesscpp::cuda::internal::kMaxVmmRequestBlocks) std::abort();
  std::string again(token);
  for (size_t i = 0; i < blocks->size(); ++i) again += (i == 0 ? " " : ",") + std::to_string((*blocks)[i]);
  // Leading zeros are the only other spelling from_chars accepts.
  if (again.size() > request.size()) std::abort();
  return 0;
}
