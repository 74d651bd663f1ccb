"""The JAX program the bridge tests run (test_tesseract_jax.py with
tesseract-jax, test_tesscpp_jax.py with tesscpp.jax): the transformations a
user applies to the univariate Tesseract (the Rosenbrock function), by name."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

X, Y = 1.5, 2.0


def program(apply: Callable, t) -> dict[str, np.ndarray]:
    """`apply` is tesseract_jax.apply_tesseract or tesscpp.jax.apply_tesseract."""

    def f(x, y):
        return apply(t, {"x": x, "y": y})["result"]

    def f_batched(x, y):
        return apply(t, {"x": x, "y": y}, vmap_method="sequential")["result"]

    def f_auto(x, y):
        return apply(t, {"x": x, "y": y}, vmap_method="auto_experimental")["result"]

    x, y = jnp.float32(X), jnp.float32(Y)
    xs, ys = jnp.array([0.0, 1.0, 1.5, -1.2], jnp.float32), jnp.array([0.0, 1.0, 2.0, 1.0], jnp.float32)
    primal, tangent = jax.jvp(f, (x, y), (jnp.float32(1.0), jnp.float32(0.5)))
    return {
        "apply": f(x, y),
        "grad": jnp.stack(jax.grad(f, argnums=(0, 1))(x, y)),
        "jit": jax.jit(f)(x, y),
        "jit(grad)": jnp.stack(jax.jit(jax.grad(f, argnums=(0, 1)))(x, y)),
        "jvp primal": primal,
        "jvp tangent": tangent,
        "jacfwd": jnp.stack(jax.jacfwd(f, argnums=(0, 1))(x, y)),
        "jacrev": jnp.stack(jax.jacrev(f, argnums=(0, 1))(x, y)),
        "vmap": jax.vmap(f_batched)(xs, ys),
        "vmap auto_experimental": jax.vmap(f_auto)(xs, ys),
        "jit(vmap(grad))": jnp.stack(jax.jit(jax.vmap(jax.grad(f_batched, argnums=(0, 1))))(xs, ys)),
    }
