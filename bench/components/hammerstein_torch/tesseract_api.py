"""hammerstein_torch: the Hammerstein integral equation of
bench/components/hammerstein.py in PyTorch, float64 — the torch Tesseract of
bench/forward_reuse_bench.py. Forward: Newton's method, one dense LU
factorization per iteration; VJP by the implicit function theorem, one
transposed solve with the kept factors, so the reverse costs a small part of
the forward (forward-dominated, unlike an explicit time stepper).

The solve is a torch.autograd.Function whose forward returns the LU factors
as outputs of its own (setup_context style, which torch.func.vjp requires):
torch.func.vjp's pullback then holds them. Served by tesscpp, an apply that a
client asks to keep (tesscpp.torch does when a backward may follow) keeps that
pullback with tesscpp.reuse, and the VJP at the same inputs runs only the
transposed solve. Anywhere else (tesscpp not importable, as under
tesseract-runtime, or nobody asked) the VJP solves again, as a plain torch
Tesseract does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

# The problem's schemas and algebra, shared with hammerstein_jax_recipe: a
# Tesseract's loader puts only its own folder on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hammerstein  # noqa: E402
from hammerstein import DIFFERENTIABLE_INPUTS, OUTPUTS, InputSchema, OutputSchema, abstract_eval, reuse  # noqa: E402, F401


def _lu_solve(factors: tuple[torch.Tensor, torch.Tensor], b: torch.Tensor, adjoint: bool = False) -> torch.Tensor:
    return torch.linalg.lu_solve(*factors, b[:, None], adjoint=adjoint)[:, 0]


class _Solve(torch.autograd.Function):
    """(s, nu) -> (u, J's LU factors and pivots, A tanh(u)); only u is differentiable."""

    @staticmethod
    def forward(s: torch.Tensor, nu: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, ...]:
        u = s
        for _ in range(hammerstein.MAX_NEWTON):
            u, factors, converged = hammerstein.newton_step(torch, torch.linalg.lu_factor, _lu_solve, a, s, nu, u)
            if converged:
                break
        return u, *factors, hammerstein.coupling(torch, a, u)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: tuple) -> None:
        _, lu, pivots, coupling = output
        ctx.mark_non_differentiable(lu, pivots, coupling)
        ctx.save_for_backward(lu, pivots, coupling)

    @staticmethod
    def backward(ctx: Any, u_bar: torch.Tensor, *_: Any) -> tuple[torch.Tensor, torch.Tensor, None]:
        lu, pivots, coupling = ctx.saved_tensors
        s_bar, nu_bar = hammerstein.pullback(
            lambda factors, b: _lu_solve(factors, b, adjoint=True), (lu, pivots), coupling, u_bar
        )
        return s_bar, nu_bar, None


def _solver(inputs: Any, s: torch.Tensor) -> Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """(s, nu) -> (u, energy), ell fixed: what is differentiated, on s's device."""
    nodes, weights = (torch.from_numpy(x).to(s.device) for x in hammerstein.quadrature(s.shape[0]))
    ell = float(inputs.ell)

    def solve(s: torch.Tensor, nu: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # A is built here, with the forward, so that a VJP using a kept pullback skips it too.
        u = _Solve.apply(s, nu, hammerstein.operator(torch, nodes, weights, ell))[0]
        return u, hammerstein.energy(weights, u)

    return solve


def _tensor(value: Any) -> torch.Tensor:
    """A GPU transport's device array as torch adopts it (no copy), else a
    float64 host copy (the decoded array may be read-only, which torch warns
    about)."""
    if hasattr(value, "__cuda_array_interface__"):
        return torch.from_dlpack(value)
    return torch.tensor(np.asarray(value), dtype=torch.float64)


def _answer(value: torch.Tensor) -> Any:
    """An output as the schema takes it: a device array stays on the device
    (going back by the GPU transport), a scalar is a float."""
    value = value.detach()
    if value.dim() == 0:
        return float(value)
    return value if value.is_cuda else value.numpy()


def _primals(inputs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    s = _tensor(inputs.s)
    return s, torch.tensor(float(inputs.nu), dtype=torch.float64, device=s.device)


def apply(inputs: InputSchema) -> OutputSchema:
    primals = _primals(inputs)
    solve = _solver(inputs, primals[0])
    if reuse is not None:
        u, energy = reuse.torch_apply(solve, *primals)
    else:
        with torch.no_grad():
            u, energy = solve(*primals)
    return OutputSchema(u=_answer(u), energy=_answer(energy))


def vector_jacobian_product(
    inputs: InputSchema, vjp_inputs: set[str], vjp_outputs: set[str], cotangent_vector: dict[str, Any]
) -> dict[str, Any]:
    primals = _primals(inputs)
    solve = _solver(inputs, primals[0])
    if reuse is not None:
        pullback = reuse.torch_pullback(solve, *primals)  # the kept one, or a new forward
    else:
        pullback = torch.func.vjp(solve, *primals)[1]
    # Outputs not asked about take a zero cotangent (u has s's shape, energy none).
    device = primals[0].device
    shapes = {"u": primals[0].shape, "energy": ()}
    cotangents = tuple(
        _tensor(cotangent_vector[name]).to(device)
        if name in vjp_outputs
        else torch.zeros(shapes[name], dtype=torch.float64, device=device)
        for name in OUTPUTS
    )
    grads = dict(zip(DIFFERENTIABLE_INPUTS, pullback(cotangents), strict=True))
    return {name: _answer(grads[name]) for name in vjp_inputs}
