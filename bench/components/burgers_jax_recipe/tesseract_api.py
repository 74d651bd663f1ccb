"""burgers_jax_recipe: examples/burgers_ad's kernel (explicit steps of the 1-D
viscous Burgers equation on a periodic grid) in JAX, written on tesseract-core's
JAX recipe (``jax_recipes.jax_apply``/``jax_vjp``): the
JAX Tesseract of bench/forward_reuse_bench.py, with a VJP only.

Which forward cache it uses, chosen when it is imported:

- ``BURGERS_JAX_VJP_CACHE=1`` in the server's environment: tesseract-core's
  own (``set_jax_vjp_cache_size(1)``); apply and VJP go through the recipe
  alone and tesscpp.reuse is not used, on tesseract-runtime and on tesscpp
  alike, so the rows with it measure that cache by itself (it lives in the
  module's process, so it works under tesscpp too).
- otherwise, when tesscpp is importable (``tesscpp serve``): tesscpp.reuse. An
  apply a client asks to keep runs through ``jax.vjp`` and keeps the pullback;
  the VJP at the same inputs uses it. Calls nobody asked to keep, and VJPs
  without a kept pullback, are the recipe's plain ``jax_apply``/``jax_vjp``.
- otherwise (tesseract-runtime without the variable): the plain recipe; every
  VJP runs the forward again.

``steps``, ``dt`` and ``dx`` are constants of the compiled kernel (one jitted
function per value, as burgers_ad's scalar parameters): ``steps`` must be
static for ``fori_loop`` to be reverse-differentiable, and it keeps the
recipe from differentiating the two non-differentiable floats, which it
would do for every array leaf it is given.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from pydantic import BaseModel, Field
from tesseract_core.runtime import Array, Differentiable, Float64, Int64, ShapeDType, jax_recipes

jax.config.update("jax_enable_x64", True)

CORE_CACHE = os.environ.get("BURGERS_JAX_VJP_CACHE", "") not in ("", "0")
if CORE_CACHE:
    from tesseract_core.runtime.experimental import set_jax_vjp_cache_size

    set_jax_vjp_cache_size(1)
    reuse = None
else:
    try:
        from tesscpp import reuse
    except ImportError:  # served without tesscpp (tesseract-runtime)
        reuse = None

DIFFERENTIABLE_INPUTS = ("u", "nu")


class InputSchema(BaseModel):
    u: Differentiable[Array[(None,), Float64]] = Field(description="Velocity on a periodic grid.")
    nu: Differentiable[Float64] = Field(0.05, description="Viscosity.")
    dt: Float64 = Field(1e-4, description="Time step.")
    dx: Float64 = Field(1e-2, description="Grid spacing.")
    steps: Int64 = Field(1, description="Number of steps.")


class OutputSchema(BaseModel):
    u_next: Differentiable[Array[(None,), Float64]] = Field(description="Velocity after the steps.")
    energy: Differentiable[Float64] = Field(description="Kinetic energy after the steps.")


def _step(u: jax.Array, nu: jax.Array, dt: float, dx: float) -> jax.Array:
    left, right = jnp.roll(u, 1), jnp.roll(u, -1)
    # Upwind: the difference on the side the flow comes from.
    advection = jnp.where(u > 0, u * (u - left), u * (right - u)) / dx
    diffusion = nu * (right - 2.0 * u + left) / (dx * dx)
    return u - dt * advection + dt * diffusion


@functools.lru_cache(maxsize=16)
def _apply_jit(steps: int, dt: float, dx: float) -> Callable[[dict], dict]:
    """The recipe's ``apply_jit`` for these constants (the same object for the
    same constants, so that the recipe's jitted VJP compiles once)."""

    @eqx.filter_jit
    def apply_jit(inputs: dict) -> dict:
        # Each step checkpointed: a pullback holds one state per step (steps x
        # cells x 8 bytes) and the reverse pass recomputes a step's
        # intermediates, cheap next to storing them (4x the bytes, and a
        # forward through jax.vjp 3x slower on the benchmark's 2-core VM).
        body = jax.checkpoint(lambda _, v: _step(v, inputs["nu"], dt, dx))
        u = jax.lax.fori_loop(0, steps, body, inputs["u"])
        return {"u_next": u, "energy": 0.5 * jnp.sum(u * u) * dx}

    return apply_jit


def _apply_jit_for(inputs: Any) -> Callable[[dict], dict]:
    return _apply_jit(int(inputs.steps), float(inputs.dt), float(inputs.dx))


def _solver(inputs: InputSchema) -> Callable[[jax.Array, jax.Array], dict]:
    """(u, nu) -> outputs, the other inputs fixed: what tesscpp.reuse differentiates."""
    apply_jit = _apply_jit_for(inputs)
    rest = {"dt": inputs.dt, "dx": inputs.dx, "steps": inputs.steps}
    return lambda u, nu: apply_jit({"u": u, "nu": nu, **rest})


def _primals(inputs: InputSchema) -> tuple[jax.Array, jax.Array]:
    return jnp.asarray(inputs.u), jnp.asarray(inputs.nu)


def apply(inputs: InputSchema) -> OutputSchema:
    if reuse is not None and reuse.keep_requested():
        return reuse.jax_apply(_solver(inputs), *_primals(inputs))
    return jax_recipes.jax_apply(_apply_jit_for(inputs), inputs)


def abstract_eval(abstract_inputs: Any) -> dict:
    """u_next has u's shape; energy is a scalar; both float64. (Not the recipe's
    jax_abstract_eval: the abstract inputs hold no value of steps, dt and dx.)"""
    return {
        "u_next": ShapeDType(shape=abstract_inputs.u.shape, dtype="float64"),
        "energy": ShapeDType(shape=(), dtype="float64"),
    }


def vector_jacobian_product(
    inputs: InputSchema, vjp_inputs: set[str], vjp_outputs: set[str], cotangent_vector: dict[str, Any]
) -> dict[str, Any]:
    pullback = reuse.kept() if reuse is not None else None
    if pullback is None:
        return jax_recipes.jax_vjp(_apply_jit_for(inputs), inputs, vjp_inputs, vjp_outputs, cotangent_vector)
    # The kept pullback takes a cotangent for every output: zero for those not asked about.
    u = jnp.asarray(inputs.u)
    cotangents = {"u_next": jnp.zeros_like(u), "energy": jnp.zeros((), u.dtype)}
    cotangents.update({name: jnp.asarray(cotangent_vector[name]) for name in vjp_outputs})
    grads = dict(zip(DIFFERENTIABLE_INPUTS, pullback(cotangents), strict=True))
    return {name: grads[name] for name in vjp_inputs}
