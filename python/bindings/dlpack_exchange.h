// dlpack_exchange.h: arrays taken through DLPack's C exchange API, the table
// of C functions a framework hangs on its array type
// (`type(x).__dlpack_c_exchange_api__`; torch.Tensor from torch 2.10, first
// as `__c_dlpack_exchange_api__`). It hands over the same DLPack tensor as
// `x.__dlpack__()` without the Python call (12-26 µs per CUDA tensor on the
// H100 machine for torch's `__dlpack__(stream=1)`), and says which stream
// the framework currently works on, so that tesscpp orders its own stream
// after it as `__dlpack__(stream=1)` would (docs/gpu-transport.md §16).
#pragma once

#include <nanobind/nanobind.h>

#include <optional>

#include "tesscpp/status.h"
#include "tesscpp/tensor.h"

namespace tesscpp::bindings {

/// \brief `object`'s array as a Tensor borrowing its memory, taken through
/// its type's exchange API; nullopt where the type offers none (or one of
/// another major version), or where the array is not one this path takes
/// as it is (strided, an unsupported dtype or device, CUDA without a usable
/// CUDA here): the caller then goes the `__dlpack__` way. A CUDA array is
/// ordered before tesscpp's consumer stream, the legacy default stream.
/// An error where the CUDA stream ordering fails.
Result<std::optional<Tensor>> ImportByExchangeApi(nanobind::handle object, bool cuda_usable);

}  // namespace tesscpp::bindings
