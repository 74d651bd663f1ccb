"""``apply_tesseract``: any Tesseract as a differentiable JAX operation.

The semantics are tesseract-jax 0.4.0's (``tesseract_jax.apply_tesseract``):
a user changes the import and keeps the results. Under ``jax.jit`` a
``tesscpp.Tesseract`` is called from compiled code by XLA's FFI custom call,
in C++ with no Python and no GIL; tesseract-core's Tesseract objects are
called from a Python callback, as tesseract-jax calls them
(docs/jax-bridge.md).

The package, in the order a call meets it:

- ``_apply``: ``apply_tesseract``: inputs coerced, abstract_eval, the primitive;
- ``_paths``: leaves as the protocol names them (differentiable templates);
- ``_request``: one use of the primitive as a request (body, arguments, results);
- ``_primitive``: the primitive, its abstract evaluation, JVP and transpose rules;
- ``_batching``: vmap methods and batched (co)tangents through the jacobian;
- ``_lowering``: the custom call, or the Python callback.
"""

from ._apply import apply_tesseract
from ._batching import VMAP_METHODS
from ._lowering import ffi_available, ffi_calls, ffi_requests_peak

__all__ = ["VMAP_METHODS", "apply_tesseract", "ffi_available", "ffi_calls", "ffi_requests_peak"]
