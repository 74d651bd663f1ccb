"""burgers_torch: examples/burgers_ad's kernel (explicit steps of the 1-D viscous
Burgers equation on a periodic grid, upwind advection, central diffusion) in
PyTorch, float64, with a jacobian-free VJP from torch.func.vjp: the torch
Tesseract of bench/forward_reuse_bench.py.

Served by tesscpp, an apply that a client asks to keep (tesscpp.torch does when
a backward may follow) keeps torch.func.vjp's pullback with tesscpp.reuse, and
the VJP at the same inputs runs only the reverse pass. Anywhere else (tesscpp
not importable, as under tesseract-runtime, or nobody asked) the VJP runs the
forward again, as a plain torch Tesseract does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, Field
from tesseract_core.runtime import Array, Differentiable, Float64, Int64, ShapeDType

try:
    from tesscpp import reuse
except ImportError:  # served without tesscpp (tesseract-runtime)
    reuse = None

DIFFERENTIABLE_INPUTS = ("u", "nu")
OUTPUTS = ("u_next", "energy")


class InputSchema(BaseModel):
    u: Differentiable[Array[(None,), Float64]] = Field(description="Velocity on a periodic grid.")
    nu: Differentiable[Float64] = Field(0.05, description="Viscosity.")
    dt: Float64 = Field(1e-4, description="Time step.")
    dx: Float64 = Field(1e-2, description="Grid spacing.")
    steps: Int64 = Field(1, description="Number of steps.")


class OutputSchema(BaseModel):
    u_next: Differentiable[Array[(None,), Float64]] = Field(description="Velocity after the steps.")
    energy: Differentiable[Float64] = Field(description="Kinetic energy after the steps.")


def _step(u: torch.Tensor, nu: torch.Tensor, dt: float, dx: float) -> torch.Tensor:
    left, right = torch.roll(u, 1), torch.roll(u, -1)
    # Upwind: the difference on the side the flow comes from.
    advection = torch.where(u > 0, u * (u - left), u * (right - u)) / dx
    diffusion = nu * (right - 2.0 * u + left) / (dx * dx)
    return u - dt * advection + dt * diffusion


def _solver(inputs: InputSchema) -> Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """(u, nu) -> (u_next, energy), the other inputs fixed: what is differentiated."""
    dt, dx, steps = float(inputs.dt), float(inputs.dx), int(inputs.steps)

    def solve(u: torch.Tensor, nu: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        for _ in range(steps):
            u = _step(u, nu, dt, dx)
        return u, 0.5 * torch.sum(u * u) * dx

    return solve


def _primals(inputs: InputSchema) -> tuple[torch.Tensor, torch.Tensor]:
    # A copy: the decoded array may be read-only, which torch warns about.
    u = torch.tensor(np.asarray(inputs.u), dtype=torch.float64)
    return u, torch.tensor(float(inputs.nu), dtype=torch.float64)


def apply(inputs: InputSchema) -> OutputSchema:
    solve, primals = _solver(inputs), _primals(inputs)
    if reuse is not None:
        u_next, energy = reuse.torch_apply(solve, *primals)
    else:
        with torch.no_grad():
            u_next, energy = solve(*primals)
    return OutputSchema(u_next=u_next.detach().numpy(), energy=energy.detach().numpy())


def abstract_eval(abstract_inputs: Any) -> dict:
    """u_next has u's shape; energy is a scalar; both float64."""
    return {
        "u_next": ShapeDType(shape=abstract_inputs.u.shape, dtype="float64"),
        "energy": ShapeDType(shape=(), dtype="float64"),
    }


def vector_jacobian_product(
    inputs: InputSchema, vjp_inputs: set[str], vjp_outputs: set[str], cotangent_vector: dict[str, Any]
) -> dict[str, Any]:
    solve, primals = _solver(inputs), _primals(inputs)
    if reuse is not None:
        pullback = reuse.torch_pullback(solve, *primals)  # the kept one, or a new forward
    else:
        pullback = torch.func.vjp(solve, *primals)[1]
    # Outputs not asked about take a zero cotangent (u_next has u's shape, energy none).
    shapes = {"u_next": primals[0].shape, "energy": ()}
    cotangents = tuple(
        torch.tensor(np.asarray(cotangent_vector[name]), dtype=torch.float64)
        if name in vjp_outputs
        else torch.zeros(shapes[name], dtype=torch.float64)
        for name in OUTPUTS
    )
    grads = dict(zip(DIFFERENTIABLE_INPUTS, pullback(cotangents), strict=True))
    return {name: grads[name].numpy() for name in vjp_inputs}
