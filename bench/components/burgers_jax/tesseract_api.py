"""burgers_jax: examples/burgers_ad's kernel (explicit steps of the 1-D viscous
Burgers equation, upwind advection) written in JAX, with JVP and VJP from JAX's
transforms, following tesseract-core's JAX recipe: the autodiff-native Python
Tesseract that bench/autodiff_bench.py compares our derived endpoints with.
"""

from functools import partial

import jax
import jax.numpy as jnp
from pydantic import BaseModel, Field
from tesseract_core.runtime import Array, Differentiable, Float64, Int64
from tesseract_core.runtime.tree_transforms import filter_func, flatten_with_paths

jax.config.update("jax_enable_x64", True)


class InputSchema(BaseModel):
    u: Differentiable[Array[(None,), Float64]] = Field(description="Velocity on a periodic grid.")
    nu: Differentiable[Float64] = Field(0.05, description="Viscosity.")
    dt: Float64 = Field(1e-4, description="Time step.")
    dx: Float64 = Field(1e-2, description="Grid spacing.")
    steps: Int64 = Field(1, description="Number of steps.")


class OutputSchema(BaseModel):
    u_next: Differentiable[Array[(None,), Float64]]
    energy: Differentiable[Float64]


def step(u, nu, dt, dx):
    left, right = jnp.roll(u, 1), jnp.roll(u, -1)
    advection = jnp.where(u > 0, u * (u - left) / dx, u * (right - u) / dx)
    diffusion = nu * (right - 2.0 * u + left) / (dx * dx)
    return u - dt * advection + dt * diffusion


@partial(jax.jit, static_argnames=("steps",))
def run(u, nu, dt, dx, steps):
    u = jax.lax.fori_loop(0, steps, lambda _, v: step(v, nu, dt, dx), u)
    return {"u_next": u, "energy": 0.5 * jnp.sum(u * u) * dx}


def apply_tree(inputs: dict) -> dict:
    return run(inputs["u"], inputs["nu"], inputs["dt"], inputs["dx"], int(inputs["steps"]))


def apply(inputs: InputSchema) -> OutputSchema:
    return apply_tree(inputs.model_dump())


def jacobian_vector_product(inputs, jvp_inputs, jvp_outputs, tangent_vector):
    tree = inputs.model_dump()
    f = filter_func(apply_tree, tree, output_paths=jvp_outputs, input_paths=jvp_inputs)
    primals = tuple(flatten_with_paths(tree, jvp_inputs).values())
    tangents = tuple(tangent_vector[path] for path in jvp_inputs)
    return jax.jvp(f, primals, tangents)[1]


def vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent_vector):
    tree = inputs.model_dump()
    f = filter_func(apply_tree, tree, output_paths=vjp_outputs, input_paths=vjp_inputs)
    primals = tuple(flatten_with_paths(tree, vjp_inputs).values())
    _, pullback = jax.vjp(f, *primals)
    return dict(zip(vjp_inputs, pullback(cotangent_vector), strict=True))
