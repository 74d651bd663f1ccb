"""``jax.vmap`` of the primitive: tesseract-jax 0.4.0's ``vmap_method``
values, and batched (co)tangents at one primal through the ``jacobian``
endpoint (``materialize_jacobian``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ._paths import name
from ._request import Spec

# tesseract-jax 0.4.0's, and "parallel" (as tesscpp.torch has it): one call
# per element, all sent at once, so a server's workers share the batch.
VMAP_METHODS = (None, "sequential", "auto_experimental", "expand_dims", "broadcast_all", "parallel")

# The primitive's bind (``_primitive.bind``), which ``batch`` is given: this
# module is imported by ``_primitive``.
Bind = Callable[..., Any]


def _not_supported() -> NotImplementedError:
    return NotImplementedError(
        "vmap/jacobian is not supported with vmap_method=None. "
        "Pass vmap_method='sequential', 'expand_dims', 'broadcast_all', or 'auto_experimental' "
        "to apply_tesseract to enable vmap support. "
        "See https://docs.pasteurlabs.ai/projects/tesseract-jax/latest/content/vmap-methods.html"
    )


def _sequential(
    bind: Bind, args: list[Any], batched: list[bool], params: dict[str, Any]
) -> tuple[list[Any], list[int]]:
    """One call per batch element (jax.lax.map)."""
    fixed = [a for a, b in zip(args, batched, strict=True) if not b]
    moving = [a for a, b in zip(args, batched, strict=True) if b]

    def one(elements: list[Any]) -> Any:
        f, m = iter(fixed), iter(elements)
        return bind(args=[next(m) if b else next(f) for b in batched], **params)

    outs = jax.lax.map(one, moving)
    return list(outs), [0] * len(outs)


def _vectorizable(spec: Spec, kind: str, batched: list[bool]) -> bool:
    """auto_experimental: every primal that must carry the batch is a
    differentiable array of any shape (``Array[..., dtype]``)."""
    n = len(spec.primal_paths)
    need = [batched[i] or (kind == "jvp" and batched[n + i]) for i in range(n)]
    for path, needed in zip(spec.primal_paths, need, strict=True):
        if not needed:
            continue
        _, template = name(path, spec.in_templates)
        if template is None or "shape" in spec.in_templates[template]:
            return False
    return True


def _vectorized(
    bind: Bind, args: list[Any], batched: list[bool], size: int, params: dict[str, Any]
) -> tuple[list, list]:
    """One call with the batch as the leading dimension of the arrays."""
    spec, kind = params["spec"], params["kind"]
    n = len(spec.primal_paths)
    args = list(args)
    if kind == "jvp":
        for i in range(n):
            if batched[i] != batched[n + i]:
                args[i], args[n + i] = jnp.broadcast_arrays(args[i], args[n + i])
    avals = tuple(jax.core.ShapedArray((size, *a.shape), a.dtype) for a in params["avals"])
    outs = bind(args=args, **{**params, "avals": avals})
    return list(outs), [0] * len(outs)


def _matmul(block: Any, vectors: Any) -> Any:
    """Each row of `vectors` (batch, *in) through `block` (*out, *in): (batch, *out)."""
    vectors = vectors.astype(block.dtype)
    return jax.vmap(lambda v: jnp.tensordot(block, v, axes=v.ndim))(vectors)


def _rmatmul(block: Any, vectors: Any) -> Any:
    """Each row of `vectors` (batch, *out) against `block` (*out, *in): (batch, *in)."""
    vectors = vectors.astype(block.dtype)
    return jnp.tensordot(vectors, block, axes=vectors.ndim - 1)


def _through_jacobian(bind: Bind, args: list[Any], dims: list[Any], params: dict[str, Any]) -> tuple[list, list]:
    """Batched (co)tangents at one primal: one jacobian call and contractions."""
    spec, kind, has_tangent, avals = params["spec"], params["kind"], params["has_tangent"], params["avals"]
    n = len(spec.primal_paths)
    primals, tangents = list(args[:n]), list(args[n:])
    size = next(t.shape[d] for t, d in zip(tangents, dims[n:], strict=True) if d is not None)
    tangents = [
        jnp.broadcast_to(t, (size, *t.shape)) if d is None else jnp.moveaxis(t, d, 0)
        for t, d in zip(tangents, dims[n:], strict=True)
    ]
    ins = [spec.input_name(p) for p in spec.primal_paths]
    outs = [spec.output_name(p) for p in spec.out_paths]
    cols = [i for i in range(n) if ins[i][1] and has_tangent[i]]
    rows = [j for j in range(len(outs)) if outs[j][1]]
    jac = (tuple(ins[i][0] for i in cols), tuple(outs[j][0] for j in rows), "fwd" if kind == "jvp" else "bwd")
    blocks = bind(spec=spec, kind="jacobian", args=primals, has_tangent=has_tangent[:n], avals=avals, jac=jac)
    if kind == "jvp":  # each output row: the sum over inputs of J[row][col] @ tangent
        slots = [(aval, [(blocks[rows.index(j) * len(cols) + c], tangents[i]) for c, i in enumerate(cols)])
                 if j in rows else (aval, None) for j, aval in enumerate(avals)]  # fmt: skip
        contract = _matmul
    else:  # each input column: the sum over outputs of cotangent @ J[row][col]
        slots = [(primal, [(blocks[r * len(cols) + cols.index(i)], tangents[j]) for r, j in enumerate(rows)])
                 if i in cols else (primal, None) for i, primal in enumerate(primals)]  # fmt: skip
        contract = _rmatmul
    result = []
    for like, terms in slots:
        total = jnp.full((size, *like.shape), jnp.nan if terms is None else 0, like.dtype)
        for block, vectors in terms or []:
            total = total + contract(block, vectors)
        result.append(total)
    return result, [0] * len(result)


def _via_jacobian(spec: Spec, kind: str, dims: list[Any]) -> bool:
    if kind not in ("jvp", "vjp"):
        return False
    n = len(spec.primal_paths)
    available = "jacobian" in spec.endpoints
    if spec.materialize_jacobian is True and not available:
        raise RuntimeError("materialize_jacobian=True but the Tesseract does not expose a 'jacobian' endpoint.")
    primals_batched = any(d is not None for d in dims[:n])
    tangents_batched = any(d is not None for d in dims[n:])
    wanted = spec.materialize_jacobian is True or (spec.materialize_jacobian is None and available)
    return not primals_batched and tangents_batched and wanted


def batch(bind: Bind, args: Any, dims: Any, **params: Any) -> tuple[list, list]:
    spec, kind = params["spec"], params["kind"]
    dims = list(dims)
    if kind == "apply":  # a batch of applies keeps nothing: one reference per site (docs/forward-reuse.md)
        params = {**params, "keep": False}
    if _via_jacobian(spec, kind, dims):
        return _through_jacobian(bind, list(args), dims, params)
    method = spec.vmap_method
    if method is None:
        raise _not_supported()
    moved = [a if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims, strict=True)]
    batched = [d is not None for d in dims]
    size = next(a.shape[0] for a, b in zip(moved, batched, strict=True) if b)
    n = len(spec.primal_paths)
    # An hvp's primals, cotangents and tangents pair up in ways one broadcast
    # call cannot carry: one call per element, unless sent at once.
    sequential = method == "sequential" or (
        method != "parallel" and (kind == "hvp" or (kind == "vjp" and any(batched[n:])))
    )
    if sequential or (method == "auto_experimental" and not _vectorizable(spec, kind, batched)):
        return _sequential(bind, moved, batched, params)
    if method == "parallel":
        outs = bind(args=moved, **{**params, "batch": tuple(batched)})
        return list(outs), [0] * len(outs)
    if method == "broadcast_all":
        moved = [a if b else jnp.broadcast_to(a, (size, *a.shape)) for a, b in zip(moved, batched, strict=True)]
    else:
        moved = [a if b else jnp.expand_dims(a, 0) for a, b in zip(moved, batched, strict=True)]
    return _vectorized(bind, moved, batched, size, params)
