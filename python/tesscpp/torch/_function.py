"""The autograd function of one apply_tesseract call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ._arrays import as_tensor
from ._autograd import save_inputs
from ._batching import batched_gradients, batched_output_tangents, is_legacy_batched
from ._call import Call, gradients
from ._paths import LeafPath
from ._second_order import TesseractGradients
from ._vmap import VMAP_METHODS, expand_leaf, leaves_of, parallel_leaves, stack_leaf, with_batch_dim


class TesseractFunction(torch.autograd.Function):
    @staticmethod
    def forward(call: Call, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        call.apply(tensors)
        return call.output_tensors()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        call, *tensors = inputs
        ctx.save_for_forward(*save_inputs(ctx, call, tensors))
        ctx.call = call
        # Not the outputs themselves: that would be a reference cycle.
        ctx.output_specs = [(o.shape, o.dtype, o.device) for o in output]

    @staticmethod
    def backward(ctx: Any, *cotangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        call: Call = ctx.call
        saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[1 : 1 + len(call.slot_wires)]
        if any(is_legacy_batched(c) for c in cotangents):
            grads = batched_gradients(call, needs, saved, cotangents)
        elif torch.is_grad_enabled():
            # create_graph=True: gradients that can be differentiated again,
            # by the Tesseract's HVP and JVP (docs/derivatives.md §4).
            made = iter(TesseractGradients.apply(call, tuple(needs), len(saved), *saved, *cotangents))
            grads = [next(made) if need else None for need in needs]
        else:
            grads = gradients(call, needs, saved, cotangents)
        return (None, *grads, *(None,) * call.plain_count)

    @staticmethod
    def jvp(ctx: Any, *tangents: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        call: Call = ctx.call
        mine = tangents[1 : 1 + len(call.slot_wires)]
        if any(is_legacy_batched(t) for t in mine):
            return batched_output_tangents(call, ctx.output_specs, mine)
        result = call.jvp(mine)
        if result is None:
            return tuple(torch.zeros(shape, dtype=dtype, device=device) for shape, dtype, device in ctx.output_specs)
        return tuple(
            as_tensor(result[wire]).to(device)
            for wire, (_, _, device) in zip(call.output_wires, ctx.output_specs, strict=True)
        )

    @staticmethod
    def vmap(info: Any, in_dims: tuple[int | None, ...], call: Call, *tensors: torch.Tensor) -> Any:
        """Batching rule for torch.vmap, following the call's vmap_method.

        Every array output comes back batched along dim 0, the
        non-differentiable ones as tensors too (a NumPy array cannot carry the
        batch dimension); other outputs are returned once.
        """
        method = call.vmap_method
        if method is None:
            raise NotImplementedError(
                "torch.vmap over apply_tesseract needs a batching strategy. Pass "
                f"vmap_method (one of {list(VMAP_METHODS)}) to apply_tesseract."
            )
        size = info.batch_size
        dims = in_dims[1:]
        if method in ("sequential", "parallel") and size == 0:
            raise ValueError(
                f'vmap_method="{method}" cannot batch over an empty batch, since '
                "it takes the outputs from the per-element calls."
            )
        if method == "sequential":
            batched = _sequential_leaves(call, tensors, dims, size)
        elif method == "parallel":
            batched = parallel_leaves(call, tensors, dims, size)
        else:
            batched = _broadcast_leaves(call, tensors, dims, size, method)
        call.flat_result = list(batched.items())
        call.output_paths = [path for path, value in batched.items() if isinstance(value, torch.Tensor)]
        outputs = tuple(batched[path] for path in call.output_paths)
        return outputs, (0,) * len(outputs)


def _call_leaves(call: Call, tensors: Sequence[torch.Tensor]) -> dict[LeafPath, Any]:
    """Calls the Tesseract once (through the autograd function, so the outputs
    stay differentiable) and returns every output leaf by path."""
    inner = call.fresh()
    outputs = TesseractFunction.apply(inner, *tensors)
    return leaves_of(inner, outputs)


def _sequential_leaves(
    call: Call, tensors: Sequence[torch.Tensor], dims: Sequence[int | None], size: int
) -> dict[LeafPath, Any]:
    """One call per batch element, its output leaves stacked."""
    elements = [
        _call_leaves(call, [t if d is None else t.select(d, i) for t, d in zip(tensors, dims, strict=True)])
        for i in range(size)
    ]
    return {path: stack_leaf(path, [leaves[path] for leaves in elements]) for path in elements[0]}


def _broadcast_leaves(
    call: Call, tensors: Sequence[torch.Tensor], dims: Sequence[int | None], size: int, method: str
) -> dict[LeafPath, Any]:
    """One call with the batch as the arrays' leading dimension ("expand_dims",
    "broadcast_all"), its outputs checked and broadcast to the batch."""
    moved = [
        with_batch_dim(t, method, size) if d is None else t.movedim(d, 0) for t, d in zip(tensors, dims, strict=True)
    ]
    leaves = [(path, with_batch_dim(value, method, size)) for path, value in call.leaves]
    outputs = _call_leaves(call.fresh(leaves=leaves), moved)
    return {path: expand_leaf(path, value, size, method) for path, value in outputs.items()}
