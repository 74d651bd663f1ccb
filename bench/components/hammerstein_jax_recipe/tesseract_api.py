"""hammerstein_jax_recipe: the Hammerstein integral equation of
bench/components/hammerstein.py in JAX, float64, written on tesseract-core's
JAX recipe (``jax_recipes.jax_apply``/``jax_vjp``) — the JAX Tesseract of
bench/forward_reuse_bench.py, with a VJP only. Forward: Newton's method in a
``lax.while_loop``, one dense LU factorization per iteration; VJP by the
implicit function theorem: a ``jax.custom_vjp`` whose forward rule returns the
LU factors as residuals, so that ``jax.vjp``'s pullback is one transposed
solve and the reverse costs a small part of the forward (forward-dominated,
unlike an explicit time stepper).

Which forward cache it uses, chosen when it is imported:

- ``HAMMERSTEIN_JAX_VJP_CACHE=1`` in the server's environment: tesseract-core's
  own (``set_jax_vjp_cache_size(1)``); apply and VJP go through the recipe
  alone and tesscpp.reuse is not used, on tesseract-runtime and on tesscpp
  alike, so the rows with it measure that cache by itself (it lives in the
  module's process, so it works under tesscpp too).
- otherwise, when tesscpp is importable (``tesscpp serve``): tesscpp.reuse. An
  apply a client asks to keep runs through ``jax.vjp`` and keeps the pullback;
  the VJP at the same inputs uses it. Calls nobody asked to keep, and VJPs
  without a kept pullback, are the recipe's plain ``jax_apply``/``jax_vjp``.
- otherwise (tesseract-runtime without the variable): the plain recipe; every
  VJP solves again.

``ell`` is a constant of the compiled kernel (one jitted function per value):
the recipe differentiates every array leaf it is given, and the kernel's
length is not an input to differentiate.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from tesseract_core.runtime import jax_recipes

# The problem's schemas and algebra, shared with hammerstein_torch: a
# Tesseract's loader puts only its own folder on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hammerstein  # noqa: E402
from hammerstein import DIFFERENTIABLE_INPUTS, InputSchema, OutputSchema, abstract_eval  # noqa: E402, F401

jax.config.update("jax_enable_x64", True)

CORE_CACHE = os.environ.get("HAMMERSTEIN_JAX_VJP_CACHE", "") not in ("", "0")
if CORE_CACHE:
    from tesseract_core.runtime.experimental import set_jax_vjp_cache_size

    set_jax_vjp_cache_size(1)
    reuse = None
else:
    reuse = hammerstein.reuse


def _newton(s: jax.Array, nu: jax.Array, ell: float) -> tuple[jax.Array, tuple[jax.Array, jax.Array], jax.Array]:
    """u, J's LU factors (lu, pivots) and A tanh(u)."""
    n = s.shape[0]
    nodes, weights = hammerstein.quadrature(n)
    a = hammerstein.operator(jnp, jnp.asarray(nodes), jnp.asarray(weights), ell)

    def more(carry: tuple) -> jax.Array:
        _, _, converged, iterations = carry
        return ~converged & (iterations < hammerstein.MAX_NEWTON)

    def step(carry: tuple) -> tuple:
        u, _, _, iterations = carry
        u, factors, converged = hammerstein.newton_step(jnp, jsl.lu_factor, jsl.lu_solve, a, s, nu, u)
        return u, factors, converged, iterations + 1

    # The loop carries the factors out; these placeholders never reach a solve.
    unset = (jnp.zeros((n, n), s.dtype), jnp.zeros(n, jnp.int32))
    u, factors, _, _ = jax.lax.while_loop(more, step, (s, unset, jnp.bool_(False), jnp.int32(0)))
    return u, factors, hammerstein.coupling(jnp, a, u)


@functools.lru_cache(maxsize=16)
def _apply_jit(ell: float) -> Callable[[dict], dict]:
    """The recipe's ``apply_jit`` for this kernel length (the same object for
    the same length, so that the recipe's jitted VJP compiles once)."""

    @jax.custom_vjp
    def solve(s: jax.Array, nu: jax.Array) -> jax.Array:
        return _newton(s, nu, ell)[0]

    def forward(s: jax.Array, nu: jax.Array) -> tuple[jax.Array, tuple]:
        u, factors, coupling = _newton(s, nu, ell)
        return u, (factors, coupling)

    def backward(residuals: tuple, u_bar: jax.Array) -> tuple[jax.Array, jax.Array]:
        factors, coupling = residuals
        return hammerstein.pullback(lambda f, b: jsl.lu_solve(f, b, trans=1), factors, coupling, u_bar)

    solve.defvjp(forward, backward)

    @eqx.filter_jit
    def apply_jit(inputs: dict) -> dict:
        s = inputs["s"]
        u = solve(s, inputs["nu"])
        weights = jnp.asarray(hammerstein.quadrature(s.shape[0])[1])
        return {"u": u, "energy": hammerstein.energy(weights, u)}

    return apply_jit


def _apply_jit_for(inputs: Any) -> Callable[[dict], dict]:
    return _apply_jit(float(inputs.ell))


def _solver(inputs: InputSchema) -> Callable[[jax.Array, jax.Array], dict]:
    """(s, nu) -> outputs, ell fixed: what tesscpp.reuse differentiates."""
    apply_jit = _apply_jit_for(inputs)
    return lambda s, nu: apply_jit({"s": s, "nu": nu, "ell": inputs.ell})


def _primals(inputs: InputSchema) -> tuple[jax.Array, jax.Array]:
    return jnp.asarray(inputs.s), jnp.asarray(inputs.nu)


def apply(inputs: InputSchema) -> OutputSchema:
    if reuse is not None and reuse.keep_requested():
        return reuse.jax_apply(_solver(inputs), *_primals(inputs))
    return jax_recipes.jax_apply(_apply_jit_for(inputs), inputs)


def vector_jacobian_product(
    inputs: InputSchema, vjp_inputs: set[str], vjp_outputs: set[str], cotangent_vector: dict[str, Any]
) -> dict[str, Any]:
    pullback = reuse.kept() if reuse is not None else None
    if pullback is None:
        return jax_recipes.jax_vjp(_apply_jit_for(inputs), inputs, vjp_inputs, vjp_outputs, cotangent_vector)
    # The kept pullback takes a cotangent for every output: zero for those not asked about.
    s = jnp.asarray(inputs.s)
    cotangents = {"u": jnp.zeros_like(s), "energy": jnp.zeros((), s.dtype)}
    cotangents.update({name: jnp.asarray(cotangent_vector[name]) for name in vjp_outputs})
    grads = dict(zip(DIFFERENTIABLE_INPUTS, pullback(cotangents), strict=True))
    return {name: grads[name] for name in vjp_inputs}
