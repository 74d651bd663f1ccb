"""``apply_tesseract``: any Tesseract as a differentiable PyTorch operation.

Which inputs and outputs are differentiable comes from the Tesseract's OpenAPI
document (``differentiable_arrays`` of ``ApplyInputSchema`` and
``ApplyOutputSchema``). Tensors given for differentiable fields enter one
``torch.autograd.Function``; reverse mode calls the Tesseract's
``vector_jacobian_product``, forward mode (``torch.autograd.forward_ad``) its
``jacobian_vector_product``. Everything else is passed through as it is.

Works with ``tesscpp.Tesseract`` objects and with ``tesseract_core.Tesseract``
objects alike: only their public methods are used.

The package, in the order a call meets it:

- ``_paths``: leaf paths, the schema's differentiable templates and the wire
  names of concrete leaves (the protocol's path grammar is tesscpp's C++ one);
- ``_tree``: inputs and outputs as one flat (path, leaf) list and back;
- ``_arrays``: tensors to what a client sends, decoded arrays to tensors;
- ``_transport``: which GPU transport a call uses;
- ``_call``: one call's state (the flat list, its tensor slots, the endpoints);
- ``_autograd`` and ``_function``: the autograd function and what it shares;
- ``_batching`` and ``_vmap``: batched (co)tangents and torch.vmap;
- ``_apply``: ``apply_tesseract`` itself.
"""

from .._transport import SUPPORTED_GPU_TRANSPORTS
from ._apply import VMAP_METHODS, apply_tesseract

__all__ = ["SUPPORTED_GPU_TRANSPORTS", "VMAP_METHODS", "apply_tesseract"]
