"""torch.vmap over apply_tesseract: tesseract-torch 0.2.0's batching methods
and "parallel" (the per-element calls issued concurrently, as one autograd
node)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ._arrays import as_tensor, is_array
from ._autograd import save_inputs
from ._batching import concurrently, element, is_legacy_batched, stack_gradients, stack_tangents
from ._call import Call, gradients
from ._paths import LeafPath, dotted
from ._tree import all_leaves

# Batching strategies under torch.vmap: tesseract-torch 0.2.0's three, and
# "parallel" (the per-element calls of "sequential", issued concurrently).
VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all", "parallel")


def leaves_of(call: Call, outputs: Sequence[torch.Tensor]) -> dict[LeafPath, Any]:
    """Every output leaf of a finished call by path: the differentiable outputs
    as the function returned them, other arrays as tensors, the rest as is."""
    returned = dict(zip(call.output_paths, outputs, strict=True))
    leaves: dict[LeafPath, Any] = {}
    for path, value in call.flat_result:
        if path in returned:
            leaves[path] = returned[path]
            continue
        for leaf_path, leaf in all_leaves(path, value):
            leaves[leaf_path] = as_tensor(leaf) if is_array(leaf) else leaf
    return leaves


def with_batch_dim(value: Any, method: str, size: int) -> Any:
    """An unbatched tensor or NumPy array with a leading dimension: of size 1
    ("expand_dims") or of the batch size ("broadcast_all"); others as they are."""
    if not isinstance(value, (torch.Tensor, np.ndarray)):
        return value
    value = value[None]
    if method == "broadcast_all":
        broadcast = torch.broadcast_to if isinstance(value, torch.Tensor) else np.broadcast_to
        value = broadcast(value, (size, *value.shape[1:]))
    return value


def stack_leaf(path: LeafPath, values: list[Any]) -> Any:
    """One output leaf of the per-element calls, stacked along a new dim 0. A
    leaf that is not an array cannot carry the batch: element 0's value is
    returned, with a warning when another element's differs."""
    first = values[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(values)
    for index, value in enumerate(values[1:], start=1):
        try:
            differs = bool(value != first)
        except (TypeError, ValueError):
            differs = value is not first
        if differs:
            warnings.warn(
                f"Tesseract returned the non-array output {dotted(path)!r} as {value!r} for batch "
                f"element {index}, but {first!r} for element 0. Non-array outputs "
                "cannot carry a batch dimension, so the value from element 0 is "
                "the one apply_tesseract returns and the others are ignored.",
                UserWarning,
                stacklevel=2,
            )
            break
    return first


def expand_leaf(path: LeafPath, value: Any, size: int, method: str) -> Any:
    """An output leaf of a batched call, checked and broadcast to the batch:
    "expand_dims" accepts a leading 1 (an output no batched input reached),
    "broadcast_all" only the batch size."""
    if not isinstance(value, torch.Tensor):
        return value
    allowed = (size,) if method == "broadcast_all" else (size, 1)
    if value.ndim == 0 or value.shape[0] not in allowed:
        sizes = " or ".join(str(s) for s in dict.fromkeys(allowed))
        raise ValueError(
            f"vmap_method={method!r} needs every array output to have a "
            f"leading batch dimension of size {sizes}, but "
            f"{dotted(path)!r} has shape {tuple(value.shape)}."
        )
    return value.expand(size, *value.shape[1:])


@dataclass
class _Batch:
    """A "parallel" batch: the call, which tensor arguments carry the batch
    (along dim 0), the batch size, and each element's call once made."""

    call: Call
    batched: list[bool]
    size: int
    elements: list[Call] = field(default_factory=list)
    leaves: dict[LeafPath, Any] = field(default_factory=dict)

    def element_tensors(self, tensors: Sequence[Any], index: int) -> list[Any]:
        return [element(t, b, index) for t, b in zip(tensors, self.batched, strict=True)]

    def tensor_paths(self) -> list[LeafPath]:
        """The outputs the function returns: the differentiable ones first (in
        the element calls' order), then the other arrays."""
        first = self.elements[0].output_paths
        return [*first, *[p for p, v in self.leaves.items() if isinstance(v, torch.Tensor) and p not in first]]


class _ParallelFunction(torch.autograd.Function):
    """A whole "parallel" batch as one autograd node: apply, VJP and JVP are
    each one call per batch element, issued concurrently."""

    @staticmethod
    def forward(batch: _Batch, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch.elements = [batch.call.fresh() for _ in range(batch.size)]

        def run(i: int) -> None:
            batch.elements[i].apply(batch.element_tensors(tensors, i))

        concurrently(run, batch.size)
        per_element = [leaves_of(e, e.output_tensors()) for e in batch.elements]
        batch.leaves = {path: stack_leaf(path, [leaves[path] for leaves in per_element]) for path in per_element[0]}
        return tuple(batch.leaves[p] for p in batch.tensor_paths())

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        batch, *tensors = inputs
        save_inputs(ctx, batch.call, tensors)
        ctx.batch = batch
        n_diff = len(batch.elements[0].output_paths)
        ctx.mark_non_differentiable(*output[n_diff:])
        ctx.output_specs = [(o.shape, o.dtype, o.device) for o in output[:n_diff]]
        ctx.n_other = len(output) - n_diff

    @staticmethod
    def backward(ctx: Any, *cotangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        batch: _Batch = ctx.batch
        saved = ctx.saved_tensors
        call = batch.call
        needs = ctx.needs_input_grad[1 : 1 + len(call.slot_wires)]
        mine = cotangents[: len(batch.elements[0].output_paths)]
        if any(is_legacy_batched(c) for c in mine):
            raise NotImplementedError(
                'vmap_method="parallel" cannot take batched cotangents; use vmap_method="sequential"'
            )

        def element_grads(i: int) -> list[torch.Tensor | None]:
            slices = [element(t, b, i) for t, b in zip(saved, batch.batched, strict=False)]
            return gradients(batch.elements[i], needs, slices, [element(c, True, i) for c in mine])

        per_element = concurrently(element_grads, batch.size)
        grads: list[torch.Tensor | None] = []
        for k, need in enumerate(needs):
            if not need:
                grads.append(None)
            elif batch.batched[k]:
                grads.append(stack_gradients(per_element, k))
            else:  # one tensor used by every element: its gradients add up
                grads.append(stack_gradients(per_element, k).sum(0))
        return (None, *grads, *(None,) * call.plain_count)

    @staticmethod
    def jvp(ctx: Any, *tangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        batch: _Batch = ctx.batch
        mine = tangents[1 : 1 + len(batch.call.slot_wires)]

        def element_tangents(i: int) -> dict | None:
            return batch.elements[i].jvp([element(t, b, i) for t, b in zip(mine, batch.batched, strict=False)])

        results = concurrently(element_tangents, batch.size)
        element_specs = [(shape[1:], dtype, device) for shape, dtype, device in ctx.output_specs]
        outputs: list[torch.Tensor | None] = [*stack_tangents(results, batch.elements[0].output_wires, element_specs)]
        # One entry per output; the non-differentiable ones take None.
        outputs += [None] * ctx.n_other
        return tuple(outputs)


def parallel_leaves(
    call: Call, tensors: Sequence[torch.Tensor], dims: Sequence[int | None], size: int
) -> dict[LeafPath, Any]:
    """Every output leaf of a "parallel" batch by path, batched along dim 0."""
    batch = _Batch(call, [d is not None for d in dims], size)
    moved = [t if d is None else t.movedim(d, 0) for t, d in zip(tensors, dims, strict=True)]
    outputs = _ParallelFunction.apply(batch, *moved)
    by_path = dict(zip(batch.tensor_paths(), outputs, strict=True))
    return {path: by_path.get(path, value) for path, value in batch.leaves.items()}
