"""Calls issued concurrently, and (co)tangents batched by torch's legacy vmap.

torch.autograd.grad(is_grads_batched=True), which
torch.autograd.functional.jacobian(vectorize=True) uses, hands backward() and
jvp() tensors batched by torch's legacy vmap: they have no storage, and a
custom Function called on them runs as a plain op. Their batch is read and
restored with torch's own _remove_batch_dim/_add_batch_dim at the tensor's
legacy vmap level (python/tests/test_vmap.py pins these hooks against the
torch in use); each batch element is one endpoint call, issued concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import torch

from ._arrays import as_tensor
from ._call import Call, gradients

T = TypeVar("T")

# Concurrent calls of one "parallel" batch or batched (co)tangent at most.
_MAX_CONCURRENT_CALLS = 16

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def concurrently(task: Callable[[int], T], count: int) -> list[T]:
    """task(0), ..., task(count - 1) in order, run on a shared thread pool (the
    clients release the GIL for the length of a call); the first error raises."""
    global _POOL
    if count <= 1:
        return [task(i) for i in range(count)]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_MAX_CONCURRENT_CALLS, thread_name_prefix="tesscpp-vmap")
    return [future.result() for future in [_POOL.submit(task, i) for i in range(count)]]


def is_legacy_batched(tensor: torch.Tensor | None) -> bool:
    return tensor is not None and bool(torch._C._functorch.is_legacy_batchedtensor(tensor))


# Legacy vmap levels count from 1 per nesting; torch keeps no public way to
# read a tensor's. The level is found by trying: removing the right one
# leaves a plain tensor. (The vmap-mode counter cannot tell it: CUDA backward
# runs on the device's autograd thread, where that counter is 0.)
_MAX_LEGACY_LEVEL = 64


def _legacy_batch_level(tensor: torch.Tensor) -> int:
    for level in range(1, _MAX_LEGACY_LEVEL + 1):
        if not is_legacy_batched(torch._remove_batch_dim(tensor, level, 1, 0)):
            return level
    raise NotImplementedError(
        "apply_tesseract takes (co)tangents batched once (torch.autograd.functional.jacobian(vectorize=True), "
        "autograd.grad(is_grads_batched=True)), not batched again inside another batch"
    )


def _unbatched(tensors: Sequence[torch.Tensor | None]) -> tuple[list[torch.Tensor | None], int, int]:
    """The (co)tangents with their legacy batch dimension made physical (dim 0),
    the unbatched ones as they are, the batch size and the batch's level."""
    level = next(_legacy_batch_level(t) for t in tensors if t is not None and is_legacy_batched(t))
    out: list[torch.Tensor | None] = []
    size = 0
    for tensor in tensors:
        if tensor is not None and is_legacy_batched(tensor):
            tensor = torch._remove_batch_dim(tensor, level, 1, 0)
            size = tensor.shape[0]
        out.append(tensor)
    return out, size, level


def element(tensor: Any, batched: bool, index: int) -> Any:
    """Batch element ``index`` of a tensor batched along dim 0, else the tensor."""
    return tensor[index] if batched and tensor is not None else tensor


def stack_gradients(per_element: Sequence[Sequence[torch.Tensor | None]], k: int) -> torch.Tensor:
    """Input k's gradients of every batch element (it needs one), stacked."""
    grads = [item[k] for item in per_element]
    assert all(g is not None for g in grads)
    return torch.stack(grads)  # type: ignore[arg-type]


def batched_gradients(
    call: Call, needs: Sequence[bool], saved: Sequence[torch.Tensor], cotangents: Sequence[torch.Tensor | None]
) -> list[torch.Tensor | None]:
    """Gradients for a batch of cotangents: one VJP per batch element, issued
    concurrently, the gradients batched again at the same level."""
    physical, size, level = _unbatched(cotangents)
    batched = [is_legacy_batched(c) for c in cotangents]

    def element_grads(i: int) -> list[torch.Tensor | None]:
        return gradients(call, needs, saved, [element(c, b, i) for c, b in zip(physical, batched, strict=True)])

    per_element = concurrently(element_grads, size)
    grads: list[torch.Tensor | None] = []
    for k, need in enumerate(needs):
        if not need:
            grads.append(None)
            continue
        stacked = stack_gradients(per_element, k) if size else saved[k].new_zeros((0, *saved[k].shape))
        grads.append(torch._add_batch_dim(stacked, 0, level))
    return grads


def stack_tangents(
    results: Sequence[dict | None], wires: Sequence[str], specs: Sequence[tuple[Any, torch.dtype, torch.device]]
) -> list[torch.Tensor]:
    """Per-element JVP answers stacked along a new dim 0, one tensor per output
    (shape, dtype and device of one element's in ``specs``); an element whose
    tangents were all zero (None) contributes zeros."""
    return [
        torch.stack(
            [
                torch.zeros(shape, dtype=dtype, device=device) if r is None else as_tensor(r[wire]).to(device)
                for r in results
            ]
        )
        if results
        else torch.zeros((0, *shape), dtype=dtype, device=device)
        for wire, (shape, dtype, device) in zip(wires, specs, strict=True)
    ]


def batched_output_tangents(
    call: Call, specs: Sequence[tuple[Any, torch.dtype, torch.device]], tangents: Sequence[torch.Tensor | None]
) -> tuple[torch.Tensor, ...]:
    """Output tangents for a batch of input tangents: one JVP per batch
    element, issued concurrently, batched again at the same level."""
    physical, size, level = _unbatched(tangents)
    batched = [is_legacy_batched(t) for t in tangents]

    def element_tangents(i: int) -> dict | None:
        return call.jvp([element(t, b, i) for t, b in zip(physical, batched, strict=True)])

    results = concurrently(element_tangents, size)
    return tuple(torch._add_batch_dim(t, 0, level) for t in stack_tangents(results, call.output_wires, specs))
