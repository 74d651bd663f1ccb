// to_python.h: Value trees as Python objects. Host arrays come back as
// writable NumPy arrays that own a reference to the C++ buffer (no copy);
// CUDA arrays as DeviceArray (device_array.h).
#pragma once

#include <nanobind/nanobind.h>

#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::bindings {

/// \brief How far the bytes of CUDA arrays are along (DeviceArray says why).
enum class DeviceBytes {
  kComplete,        // decoded by a client: nothing to wait for
  kOnLegacyStream,  // received by a server: ready in the legacy stream's order
};

/// \brief `value` as Python objects (dict, list, int, float, str, None, arrays).
nanobind::object ToPython(const Value& value, DeviceBytes device_bytes = DeviceBytes::kComplete);

/// \brief One decoded array as NumPy (host) or DeviceArray (CUDA).
nanobind::object ExportArray(const Tensor& tensor, DeviceBytes device_bytes = DeviceBytes::kComplete);

}  // namespace tesscpp::bindings
