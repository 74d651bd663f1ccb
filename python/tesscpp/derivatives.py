"""Helpers for a tesseract_api.py's ``hessian_vector_product`` (docs/derivatives.md §3).

tesscpp serves the function when a module defines it; these compute it in a
line from the module's own differentiable function, forward over reverse::

    from tesscpp import derivatives

    def hessian_vector_product(inputs, hvp_inputs, hvp_outputs, tangent_vector, cotangent_vector):
        \"\"\"jax.jvp of jax.vjp (tesscpp.derivatives.jax_hvp).\"\"\"
        def f(x):  # the differentiated inputs -> the outputs asked about
            return {"y": solve(x["x"], inputs.scale)}
        return derivatives.jax_hvp(f, {p: getattr(inputs, p) for p in hvp_inputs}, tangent_vector, cotangent_vector)

``f`` takes a dict of the differentiated inputs (``hvp_inputs``; hold the
others fixed by closing over them) and returns a dict of the outputs
``hvp_outputs`` names; the answer is keyed like the primals. JAX and torch are
imported when used. Under tesseract-runtime the function is never called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def jax_hvp(fn: Callable[[dict], dict], primals: dict, tangents: dict, cotangents: dict) -> dict:
    """d/dε of the VJP of ``cotangents`` through ``fn`` at ``primals + ε tangents``:
    ``jax.jvp`` of ``jax.vjp``'s pullback."""
    import jax
    import jax.numpy as jnp

    x = {k: jnp.asarray(v) for k, v in primals.items()}
    v = {k: jnp.asarray(tangents[k], dtype=x[k].dtype) for k in x}
    u = {k: jnp.asarray(c) for k, c in cotangents.items()}

    def gradient(at: dict) -> dict:
        return jax.vjp(fn, at)[1](u)[0]

    return dict(jax.jvp(gradient, (x,), (v,))[1])


def torch_hvp(fn: Callable[[dict], dict], primals: dict, tangents: dict, cotangents: dict) -> dict:
    """The same with ``torch.func.jvp`` of ``torch.func.vjp``'s pullback; arrays
    are adopted by torch (device arrays by DLPack, without a copy)."""
    import torch
    import torch.func

    def tensor(value: Any, like: torch.Tensor | None = None) -> torch.Tensor:
        made = torch.from_dlpack(value) if hasattr(value, "__dlpack__") else torch.as_tensor(value)
        return made.to(like.dtype) if like is not None else made

    x = {k: tensor(v) for k, v in primals.items()}
    v = {k: tensor(tangents[k], x[k]) for k in x}
    u = {k: tensor(c) for k, c in cotangents.items()}

    def gradient(at: dict) -> dict:
        return torch.func.vjp(fn, at)[1](u)[0]

    return dict(torch.func.jvp(gradient, (x,), (v,))[1])
