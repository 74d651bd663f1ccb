// device_array.h: tesscpp._tesscpp.DeviceArray, a CUDA tensor handed to Python.
#pragma once

#include <nanobind/nanobind.h>

#include "tesscpp/tensor.h"

namespace tesscpp::bindings {

// A CUDA tensor handed to Python: tesscpp._tesscpp.DeviceArray, which
// frameworks adopt without a copy through DLPack or the CUDA array interface.
// Its bytes are complete when it is made (the transport synchronised its
// copy), so it names no stream and needs none from its consumer.
struct DeviceArray {
  Tensor tensor;
};

/// \brief Registers DeviceArray in the module (DLPack, CUDA array interface,
/// host copies).
void BindDeviceArray(nanobind::module_& m);

}  // namespace tesscpp::bindings
