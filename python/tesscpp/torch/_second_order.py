"""Second derivatives of one apply_tesseract call (docs/derivatives.md §4).

A backward with create_graph=True returns the call's VJP uᵀJ(x) as
``TesseractGradients``, differentiable in x and u. Its own backward, along
the upstream gradient g, is the Tesseract's Hessian-vector product for x
(the derivative of uᵀJ along g) and its JVP J g for u (uᵀJ is linear in u).
Both are linear in g, and are returned as ``LinearMap`` results, so that a
further backward in g (torch.autograd.functional.hvp's double-backward trick)
gets their transposes: the HVP with the roles of its two input sets swapped
(the Hessian block is symmetric), and the VJP. Third derivatives (those of a
LinearMap in x or u) come back as NaN: a further backward may pass through
such a node on its way to g, so it cannot refuse, and NaN cannot be mistaken
for a derivative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ._arrays import as_tensor
from ._call import Call, gradients

# Vectors in, vectors out (None in: a zero vector).
Map = Callable[[Sequence[torch.Tensor | None]], list[torch.Tensor]]


class LinearMap(torch.autograd.Function):
    """``apply_map(vectors)`` for a linear map the Tesseract evaluates at a
    point (the tensors ``depends_on``: x and u), whose backward in the
    vectors is ``transpose`` (the transposed operator's map), itself a
    LinearMap so that it can be differentiated again; in ``depends_on``, NaN."""

    @staticmethod
    def forward(apply_map: Map, transpose: Map, count: int, *args: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        return tuple(apply_map(args[:count]))

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.apply_map, ctx.transpose, ctx.count = inputs[0], inputs[1], inputs[2]
        ctx.save_for_backward(*inputs[3 + ctx.count :])
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        point = ctx.saved_tensors
        transposed = LinearMap.apply(ctx.transpose, ctx.apply_map, len(grads), *grads, *point)
        third = [None if t is None else torch.full_like(t, float("nan")) for t in point]
        return (None, None, None, *transposed, *third)


class TesseractGradients(torch.autograd.Function):
    """A call's VJP as a differentiable function of its inputs and cotangents."""

    @staticmethod
    def forward(call: Call, needs: tuple[bool, ...], n: int, *args: Any) -> tuple[torch.Tensor, ...]:
        grads = gradients(call, needs, args[:n], args[n:])
        return tuple(g for g in grads if g is not None)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        call, needs, n, *args = inputs
        ctx.call, ctx.needs, ctx.n = call, needs, n
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*args)

    @staticmethod
    def backward(ctx: Any, *upstream: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        call: Call = ctx.call
        args = ctx.saved_tensors
        saved, cotangents = args[: ctx.n], args[ctx.n :]
        wires = call.slot_wires
        moved = [wire for wire, need in zip(wires, ctx.needs, strict=True) if need]  # upstream's, in order
        input_needs = ctx.needs_input_grad[3 : 3 + ctx.n]
        answered = [wire for wire, need in zip(wires, input_needs, strict=True) if need]
        cotangent_needs = ctx.needs_input_grad[3 + ctx.n :]
        x_bar: list[torch.Tensor | None] = [None] * ctx.n
        if answered:
            forward, transpose = (
                _hvp(call, saved, cotangents, answered, moved),
                _hvp(call, saved, cotangents, moved, answered),
            )
            hvp = LinearMap.apply(forward, transpose, len(upstream), *upstream, *args)
            for wire, value in zip(answered, hvp, strict=True):
                x_bar[wires.index(wire)] = value
        u_bar: list[torch.Tensor | None] = [None] * len(cotangents)
        if any(cotangent_needs):
            outputs = [(j, wire) for j, (wire, need) in enumerate(zip(call.output_wires, cotangent_needs, strict=True))
                       if need]  # fmt: skip
            forward, transpose = _jvp(call, moved, outputs, cotangents), _vjp(call, saved, moved, outputs)
            jvp = LinearMap.apply(forward, transpose, len(upstream), *upstream, *args)
            for (j, _), value in zip(outputs, jvp, strict=True):
                u_bar[j] = value
        return (None, None, None, *x_bar, *u_bar)


def _on(wires: Sequence[str], vectors: Sequence[torch.Tensor | None], all_wires: Sequence[str]) -> list:
    """`vectors` (one per wire of `wires`) spread over `all_wires`, None elsewhere."""
    by_wire = dict(zip(wires, vectors, strict=True))
    return [by_wire.get(wire) for wire in all_wires]


def _hvp(call: Call, saved: Sequence[torch.Tensor], cotangents: Sequence[Any], answered: list[str],
         moved: list[str]) -> Map:  # fmt: skip
    """g (one per `moved` wire) -> the HVP for the `answered` wires along g."""

    def apply_map(vectors: Sequence[torch.Tensor | None]) -> list[torch.Tensor]:
        answer = call.hvp(answered, _on(moved, vectors, call.slot_wires), saved, cotangents)
        return [_as_like(answer.get(wire), saved[call.slot_wires.index(wire)]) for wire in answered]

    return apply_map


def _jvp(call: Call, moved: list[str], outputs: list[tuple[int, str]], cotangents: Sequence[Any]) -> Map:
    """g (one per `moved` wire) -> J g on the `outputs` (shaped like their cotangents)."""

    def apply_map(vectors: Sequence[torch.Tensor | None]) -> list[torch.Tensor]:
        answer = call.jvp(_on(moved, vectors, call.slot_wires)) or {}
        return [_as_like(answer.get(wire), cotangents[j]) for j, wire in outputs]

    return apply_map


def _vjp(call: Call, saved: Sequence[torch.Tensor], moved: list[str], outputs: list[tuple[int, str]]) -> Map:
    """h (one per output of `outputs`) -> hᵀJ on the `moved` wires: the JVP's transpose."""

    def apply_map(vectors: Sequence[torch.Tensor | None]) -> list[torch.Tensor]:
        spread: list[torch.Tensor | None] = [None] * len(call.output_wires)
        for (j, _), vector in zip(outputs, vectors, strict=True):
            spread[j] = vector
        answer = call.vjp(moved, spread)
        return [_as_like(answer.get(wire), saved[call.slot_wires.index(wire)]) for wire in moved]

    return apply_map


def _as_like(value: Any, like: torch.Tensor) -> torch.Tensor:
    """An answer's array on `like`'s device, or zeros like it where there is none."""
    return torch.zeros_like(like) if value is None else as_tensor(value).to(like.device)
