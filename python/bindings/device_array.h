// device_array.h: tesscpp._tesscpp.DeviceArray, a CUDA tensor handed to Python.
#pragma once

#include <nanobind/nanobind.h>

#include "tesscpp/tensor.h"

namespace tesscpp::bindings {

// A CUDA tensor handed to Python: tesscpp._tesscpp.DeviceArray, which
// frameworks adopt without a copy through DLPack or the CUDA array interface.
// Its bytes are ready in the legacy default stream's order: complete when a
// client decoded it (the transport synchronised its copy or waited for the
// server's event), or, for inputs a server hands to a Python endpoint, once
// that stream reaches the client's IPC event. Consumers on other streams are
// ordered after it (DLPack's stream argument; the CUDA array interface's
// "stream" for the latter kind).
struct DeviceArray {
  Tensor tensor;
  // The bytes are not complete yet, only ordered on the legacy stream.
  bool pending_on_legacy_stream = false;
};

/// \brief Registers DeviceArray in the module (DLPack, CUDA array interface,
/// host copies).
void BindDeviceArray(nanobind::module_& m);

}  // namespace tesscpp::bindings
