// vmm_request.h: what a peer asks a cuda_vmm endpoint for (internal; the
// exporter in vmm.cc answers it, docs/gpu-transport-protocol.md 13).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp::cuda::internal {

/// \brief Allocations one request may name: a descriptor names at most as many.
inline constexpr size_t kMaxVmmRequestBlocks = 65536;

/// \brief The block ids of a request line "<token> <block>,<block>,..." (at
/// least one, decimal, at most kMaxVmmRequestBlocks), in order, when its
/// token is `token`; kInvalidArgument saying what is wrong otherwise.
Result<std::vector<uint64_t>> ParseVmmRequest(std::string_view request, std::string_view token);

}  // namespace tesscpp::cuda::internal
