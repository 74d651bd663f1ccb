// device_values.h: device tensors inside a Value tree: which devices hold
// them, and the host copies the protocol makes without being asked.
#pragma once

#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::core {

/// \brief Tensor::ViewOrCopyToHost for copies nobody asked for (a CUDA tensor
/// written with a host encoding, handed to a component that takes host arrays,
/// or read as a NumPy array): refused (kNotAcceptable) while
/// TESSERACT_FORBID_DEVICE_HOST_COPY is 1 or true, as tesseract-core refuses
/// them ("Implicit device-to-host copy of … (TESSERACT_FORBID_DEVICE_HOST_COPY
/// is set)."). Host tensors pass unchanged.
Result<Tensor> ImplicitCopyToHost(const Tensor& tensor);

/// \brief Whether TESSERACT_FORBID_DEVICE_HOST_COPY is 1 or true: device
/// bytes are then never copied to the host unasked.
bool ImplicitHostCopiesForbidden();

/// \brief Whether `value` holds a tensor the host cannot read anywhere.
bool HoldsDeviceTensors(const Value& value);

/// \brief The ordinals of the CUDA devices holding the bytes of non-empty
/// CUDA tensors in `value`, each once.
std::vector<int> DevicesOf(const Value& value);

/// \brief Replaces every device tensor in `value` by its host copy
/// (ImplicitCopyToHost); the rest is left as it is.
Status MoveDeviceTensorsToHost(Value& value);

}  // namespace tesscpp::core
