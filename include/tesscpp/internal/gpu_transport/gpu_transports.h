// gpu_transports.h: the names of the GPU transports this process knows
// (internal), for the CLI's help texts and the Python package. Their
// registry, with everything else a transport is, is src/gpu_transport/registry.h.
#pragma once

#include <string>
#include <vector>

#include "tesscpp/internal/codec/array_encoding.h"

namespace tesscpp::gpu_transport {

/// \brief "none", then every registered transport, in registration order.
std::vector<std::string> TransportNames();

/// \brief The same names as a list in `style` ("none or cuda_ipc").
std::string TransportChoices(NameList style);

}  // namespace tesscpp::gpu_transport
