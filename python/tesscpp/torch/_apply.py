"""``apply_tesseract``, the bridge's one public function."""

from __future__ import annotations

from typing import Any

import torch

from .._transport import SUPPORTED_GPU_TRANSPORTS, choose_transport
from ._autograd import apply_function
from ._call import Call
from ._function import TesseractFunction
from ._paths import templates_of
from ._tree import flatten_inputs, outputs_tree
from ._vmap import VMAP_METHODS

__all__ = ["VMAP_METHODS", "apply_tesseract"]


def _check_arguments(inputs: Any, gpu_transport: str | None, vmap_method: str | None) -> None:
    if gpu_transport is not None and gpu_transport not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(f"Unsupported gpu_transport {gpu_transport!r}; supported: {list(SUPPORTED_GPU_TRANSPORTS)}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"Unsupported vmap_method {vmap_method!r}; supported: {list(VMAP_METHODS)}.")
    if not isinstance(inputs, dict):
        raise TypeError(f"apply_tesseract takes the inputs as a dict, not {type(inputs).__name__}")


def _prepare(tesseract: Any, inputs: dict, gpu_transport: str | None, vmap_method: str | None) -> tuple[Call, list]:
    """The call over the inputs' flat list, and the autograd function's tensor
    arguments: the differentiable tensors, then the other tensors (detached)."""
    templates = templates_of(tesseract.openapi_schema)
    leaves = flatten_inputs(inputs, templates)
    slots: list[tuple[int, torch.Tensor, str, torch.dtype | None]] = []
    plain: list[tuple[int, torch.Tensor]] = []
    for position, (path, value) in enumerate(leaves):
        if not isinstance(value, torch.Tensor):
            continue
        leaves[position] = (path, None)  # the tensor travels as an argument
        slot = templates.input_slot(path)
        if slot is None:
            plain.append((position, value.detach()))
        else:
            slots.append((position, value, *slot))
    tensors = [t for _, t, _, _ in slots] + [t for _, t in plain]
    call = Call(
        tesseract=tesseract,
        templates=templates,
        transport=choose_transport(tesseract, gpu_transport, any(t.is_cuda for t in tensors)),
        vmap_method=vmap_method,
        leaves=leaves,
        tensor_at=[p for p, _, _, _ in slots] + [p for p, _ in plain],
        tensor_dtypes=[d for _, _, _, d in slots] + [None] * len(plain),
        slot_wires=[w for _, _, w, _ in slots],
        # A backward may follow: the apply keeps its forward for it.
        keep=torch.is_grad_enabled() and any(t.requires_grad for _, t, _, _ in slots),
    )
    return call, tensors


# torch.compile: the call leaves the process (or runs foreign C++), so there is
# nothing for dynamo to trace. Without this, dynamo steps into the client and
# calls its nanobind methods without their object (a TypeError on every
# compiled call); disabled, the compiled function breaks its graph here and the
# call runs eagerly, with its autograd node, as outside torch.compile.
@torch.compiler.disable
def apply_tesseract(
    tesseract: Any,
    inputs: dict[str, Any],
    *,
    gpu_transport: str | None = None,
    vmap_method: str | None = None,
) -> dict[str, Any]:
    """Call ``tesseract``'s apply as a differentiable PyTorch operation.

    Args:
        tesseract: a ``tesscpp.Tesseract`` (any constructor, or a with_encoding
            view) or a ``tesseract_core.Tesseract``, ready to be called.
        inputs: nested dict matching its input schema. Tensors for fields the
            schema marks differentiable take part in autograd (reverse mode via
            the VJP endpoint, forward mode via the JVP endpoint); everything
            else is sent as it is (other tensors as host arrays).
        gpu_transport: how CUDA tensors reach the Tesseract: None asks it
            (``resolve_gpu_transport``), "none" copies them through the host,
            "cuda_ipc" passes them by reference where the client can.
        vmap_method: how the call is batched under ``torch.vmap``. None raises
            when a batched tensor reaches the call. "sequential" calls the
            Tesseract once per batch element (any schema); "parallel" issues
            those calls, and their VJPs and JVPs, concurrently (spreading a
            batch over a server's workers or replicas); "expand_dims" gives
            every unbatched array input a leading dimension of size 1 and calls
            once (the schema must accept the extra dimension and broadcast 1
            against the batch); "broadcast_all" broadcasts unbatched inputs to
            the batch size instead. Under torch.vmap array outputs that are not
            differentiable come back as tensors; a non-array output is returned
            once (element 0's under the per-element methods, with a warning if
            another element's differs).

    Returns:
        The outputs, shaped like the output schema: differentiable arrays as
        tensors (on the CPU when they came through the host), everything else
        as the client decoded it.
    """
    _check_arguments(inputs, gpu_transport, vmap_method)
    call, tensors = _prepare(tesseract, inputs, gpu_transport, vmap_method)
    output_tensors = apply_function(TesseractFunction, call, *tensors)
    return outputs_tree(call.flat_result, dict(zip(call.output_paths, output_tensors, strict=True)))
