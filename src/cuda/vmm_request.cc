// vmm_request.cc: the request line of a cuda_vmm endpoint, parsed strictly.
#include "cuda/vmm_request.h"

#include <charconv>

namespace tesscpp::cuda::internal {

Result<std::vector<uint64_t>> ParseVmmRequest(std::string_view request, std::string_view token) {
  const size_t space = request.find(' ');
  if (space == std::string_view::npos || request.substr(0, space) != token) {
    return Status::InvalidArgument("the request does not carry this exporter's token");
  }
  std::vector<uint64_t> blocks;
  std::string_view listed = request.substr(space + 1);
  for (;;) {
    uint64_t id = 0;
    const char* end = listed.data() + listed.size();
    const auto [stop, error] = std::from_chars(listed.data(), end, id);
    if (error != std::errc() || (stop != end && *stop != ',')) {
      return Status::InvalidArgument("'", listed.substr(0, 64), "' does not start with a block id");
    }
    if (blocks.size() == kMaxVmmRequestBlocks) {
      return Status::InvalidArgument("a request names at most ", kMaxVmmRequestBlocks, " allocations");
    }
    blocks.push_back(id);
    if (stop == end) return blocks;
    listed.remove_prefix(static_cast<size_t>(stop - listed.data()) + 1);
  }
}

}  // namespace tesscpp::cuda::internal
