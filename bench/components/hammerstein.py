"""hammerstein: the forward-dominated solver of bench/forward_reuse_bench.py, the
problem that its torch and JAX Tesseracts (hammerstein_torch,
hammerstein_jax_recipe) both solve; each imports this module for its schemas
and for the algebra that is the same in both frameworks.

A nonlinear Hammerstein integral equation on [0, 1],

    u(x) = s(x) + nu * int_0^1 k(x, y) tanh(u(y)) dy,   k(x, y) = exp(-|x - y| / ell),

Nyström-discretized on the N = len(s) nodes of the trapezoidal rule
(x_i = i / (N - 1), weights w): u = s + nu A tanh(u) with A = K W dense,
A_ij = k(x_i, x_j) w_j. Outputs: u and the functional energy = 1/2 int u^2
(the same rule).

Forward: Newton's method on F(u) = u - s - nu A tanh(u) from u = s, one dense
LU factorization of the Jacobian J(u) = I - nu A diag(1 - tanh(u)^2) per
iteration, until a step is below TOLERANCE (relative to 1 + max |u|) or after
MAX_NEWTON iterations: several O(N^3) factorizations. The last one is J at the
converged solution to within the tolerance (the iterate whose step was below
it; the u returned, one step on, is within ~tolerance^2), so the derivative
needs no factorization of its own: a plain apply and one that keeps for the
derivative do the same work.

Reverse, by the implicit function theorem: with lambda = J^-T ubar (one solve
with those LU factors, transposed), sbar = lambda and nubar = lambda . A
tanh(u). O(N^2): a VJP that recomputes the forward costs several times one that
uses a kept one, which is what the benchmark measures.

Why Newton is safe at the benchmark's inputs: the rows of A sum to at most
2 ell (1 - exp(-1 / (2 ell))) (0.63 for ell = 0.5) and |tanh'| <= 1, so for nu
below the inverse of that (1.58) the map u -> s + nu A tanh(u) contracts in
the max norm: the solution is unique and J is invertible at every u, so every
Newton step is defined. From u = s it converges quadratically, in 4
iterations at the benchmark's inputs (nu = 1.5, s = sin(2 pi x) + noise; N
from 200 to 1300 tried): steps of ~2e-1, 6e-3, 5e-6 and 1e-11, the tolerance
well between the last two.

The functions below take the array module (torch or jax.numpy) where they
build arrays; the rest is written in operators both support.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from tesseract_core.runtime import Array, Differentiable, Float64, ShapeDType

TOLERANCE = 1e-10
MAX_NEWTON = 50
DIFFERENTIABLE_INPUTS = ("s", "nu")
OUTPUTS = ("u", "energy")

try:  # the components keep their forward with it when tesscpp serves them
    from tesscpp import reuse
except ImportError:  # served without tesscpp (tesseract-runtime)
    reuse = None


class InputSchema(BaseModel):
    s: Differentiable[Array[(None,), Float64]] = Field(description="Source at the N nodes of [0, 1].")
    nu: Differentiable[Float64] = Field(1.5, description="Strength of the nonlinear term nu tanh(u).")
    ell: Float64 = Field(0.5, description="Length of the kernel exp(-|x - y| / ell).")


class OutputSchema(BaseModel):
    u: Differentiable[Array[(None,), Float64]] = Field(description="The solution at the nodes.")
    energy: Differentiable[Float64] = Field(description="1/2 int_0^1 u^2 (trapezoidal rule).")


def abstract_eval(abstract_inputs: Any) -> dict:
    """u has s's shape; energy is a scalar; both float64."""
    return {
        "u": ShapeDType(shape=abstract_inputs.s.shape, dtype="float64"),
        "energy": ShapeDType(shape=(), dtype="float64"),
    }


def quadrature(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The trapezoidal rule's nodes and weights on [0, 1]."""
    nodes = np.linspace(0.0, 1.0, n)
    weights = np.full(n, 1.0 / (n - 1))
    weights[[0, -1]] *= 0.5
    return nodes, weights


def operator(xp: Any, nodes: Any, weights: Any, ell: float) -> Any:
    """A = K W, dense."""
    return xp.exp(-abs(nodes[:, None] - nodes[None, :]) / ell) * weights


def newton_step(xp: Any, lu_factor: Any, lu_solve: Any, a: Any, s: Any, nu: Any, u: Any) -> tuple[Any, Any, Any]:
    """One iteration from u: (the next iterate, J(u)'s LU factors, whether the step was below the tolerance)."""
    t = xp.tanh(u)
    jacobian = xp.diag(xp.ones_like(u)) - nu * a * (1.0 - t * t)  # on u's device
    factors = lu_factor(jacobian)
    step = lu_solve(factors, u - s - nu * (a @ t))
    u = u - step
    return u, factors, abs(step).max() <= TOLERANCE * (1.0 + abs(u).max())


def coupling(xp: Any, a: Any, u: Any) -> Any:
    """A tanh(u) = -dF/dnu: what nubar needs besides lambda."""
    return a @ xp.tanh(u)


def pullback(solve_transposed: Any, factors: Any, coupling: Any, u_bar: Any) -> tuple[Any, Any]:
    """(sbar, nubar) for the cotangent u_bar of u: O(N^2), given J's factors."""
    lam = solve_transposed(factors, u_bar)
    return lam, lam @ coupling


def energy(weights: Any, u: Any) -> Any:
    return 0.5 * (weights * u * u).sum()
