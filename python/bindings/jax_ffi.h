// jax_ffi.h: tesscpp's client as an XLA FFI custom call, so that a jitted JAX
// program calls a Tesseract without Python (tesscpp.jax, docs/jax-bridge.md).
//
// Python registers one call shape per lowering (the endpoint, the request body
// with null where arrays go, where each argument goes in it and where each
// result is in the answer) and passes its id as the custom call's attribute;
// the handler fills the body with tensors over XLA's argument buffers (no
// copy), calls the endpoint on tesscpp's C++ client without the GIL, and
// writes the answer's arrays into XLA's result buffers. On a CUDA device the
// arrays go by IPC handle where the Tesseract's GPU transport allows, ordered
// against XLA's stream on the GPU, and through the host otherwise.
#pragma once

#include <nanobind/nanobind.h>

namespace tesscpp::bindings {

/// \brief Adds _jax_ffi_target, _jax_register_call and _jax_ffi_calls to `m`.
void BindJaxFfi(nanobind::module_& m);

}  // namespace tesscpp::bindings
