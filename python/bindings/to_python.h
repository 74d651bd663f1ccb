// to_python.h: Value trees as Python objects. Host arrays come back as
// writable NumPy arrays that own a reference to the C++ buffer (no copy);
// CUDA arrays as DeviceArray (device_array.h).
#pragma once

#include <nanobind/nanobind.h>

#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::bindings {

/// \brief `value` as Python objects (dict, list, int, float, str, None, arrays).
nanobind::object ToPython(const Value& value);

/// \brief One decoded array as NumPy (host) or DeviceArray (CUDA).
nanobind::object ExportArray(const Tensor& tensor);

}  // namespace tesscpp::bindings
