"""The ``tesscpp_tesseract`` primitive and its rules.

One primitive stands for the endpoints (``kind``: apply, jvp, vjp, jacobian,
and tesscpp's hvp). Its arguments are the input leaves JAX traces (the
primals), followed for jvp by one tangent per primal, for vjp by one
cotangent per output, and for hvp by one cotangent per output and one tangent
per primal. Forward mode turns an apply into a jvp, transposition turns a jvp
into a vjp, forward mode over a vjp gives an hvp (docs/derivatives.md §4),
and vmap goes through ``_batching``: the semantics of tesseract-jax 0.4.0's
``apply_tesseract``, including its error texts, for what it has.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import extend
from jax.interpreters import ad, batching, mlir

from . import _batching, _lowering
from ._request import Request, Spec, build

tesseract_p = extend.core.Primitive("tesscpp_tesseract")
tesseract_p.multiple_results = True

_ENDPOINT = {
    "apply": "apply",
    "jvp": "jacobian_vector_product",
    "vjp": "vector_jacobian_product",
    "jacobian": "jacobian",
    "hvp": "hessian_vector_product",
}


def bind(
    spec: Spec,
    kind: str,
    args: Any,
    has_tangent: tuple[bool, ...],
    avals: tuple[Any, ...],
    jac: Any = None,
    batch: tuple[bool, ...] | None = None,
    keep: bool = False,
) -> Any:
    """`avals`: the apply's output avals (of one element when `batch` says
    which arguments carry a batch that vmap_method="parallel" sends at once).
    `keep`: the call takes part in forward reuse (docs/forward-reuse.md): an
    apply keeps its forward, a derivative call refers to its site's."""
    return tesseract_p.bind(
        *args, spec=spec, kind=kind, has_tangent=has_tangent, avals=avals, jac=jac, batch=batch, keep=keep
    )


def _require(spec: Spec, kind: str) -> None:
    endpoint = _ENDPOINT[kind]
    if endpoint not in spec.endpoints:
        raise NotImplementedError(
            f"Endpoint '{endpoint}' not implemented for this Tesseract. "
            f"Available endpoints: {', '.join(spec.endpoints)}. "
            f"To use this endpoint, implement the '{endpoint}' endpoint in your Tesseract object."
        )


def _jacobian_avals(spec: Spec, primals: Any, avals: tuple[Any, ...], jac: Any) -> tuple[Any, ...]:
    ins, outs, mode = jac
    by_input = {spec.input_name(p)[0]: a for p, a in zip(spec.primal_paths, primals, strict=True)}
    by_output = {spec.output_name(p)[0]: a for p, a in zip(spec.out_paths, avals, strict=True)}
    return tuple(
        jax.core.ShapedArray(
            (*by_output[o].shape, *by_input[i].shape), by_input[i].dtype if mode == "bwd" else by_output[o].dtype
        )
        for o in outs
        for i in ins
    )


def _abstract_eval(*args: Any, spec: Spec, kind: str, avals: Any, jac: Any, batch: Any, **_: Any) -> tuple[Any, ...]:
    if batch is not None:  # one element's results, each with the batch in front
        size = _batch_size(args, batch)
        element = [jax.core.ShapedArray(a.shape[1:], a.dtype) if b else a for a, b in zip(args, batch, strict=True)]
        results = _abstract_eval(*element, spec=spec, kind=kind, avals=avals, jac=jac, batch=None)
        return tuple(jax.core.ShapedArray((size, *r.shape), r.dtype) for r in results)
    n = len(spec.primal_paths)
    if kind in ("vjp", "hvp"):
        return tuple(jax.core.ShapedArray(a.shape, a.dtype) for a in args[:n])
    if kind == "jacobian":
        return _jacobian_avals(spec, args[:n], avals, jac)
    return tuple(jax.core.ShapedArray(a.shape, a.dtype) for a in avals)


def _batch_size(args: Any, batch: tuple[bool, ...]) -> int:
    return next(a.shape[0] for a, b in zip(args, batch, strict=True) if b)


def _request(args: tuple[Any, ...], params: dict[str, Any]) -> tuple[Request, list[bool] | None]:
    """The request of one call (of one element of a batch), and which of the
    arguments it sends carry the batch."""
    spec, kind, batch = params["spec"], params["kind"], params["batch"]
    _require(spec, kind)
    one = [jax.core.ShapedArray(a.shape[1:], a.dtype) if batch and batch[i] else jax.typeof(a)
           for i, a in enumerate(args)]  # fmt: skip
    results = _abstract_eval(*one, **{**params, "batch": None})
    request = build(spec, kind, params["has_tangent"], results, params["jac"])
    return request, None if batch is None else [batch[i] for i in request.take]


def _impl(*args: Any, **params: Any) -> list[Any]:
    request, batched = _request(args, params)
    sent = [args[i] for i in request.take]
    spec = params["spec"]
    device = _lowering.cuda_device(list(args))
    results = _lowering.send_all(
        spec.tesseract, request, sent, batched, device, spec.gpu_transport, _site(spec, params["keep"])
    )
    return [jnp.asarray(r) for r in results]


def _site(spec: Spec, keep: bool) -> int:
    """The forward-reuse site of a call that takes part, else -1."""
    return spec.site if keep else -1


def _lower(*args: Any, platform: str, **params: Any) -> list[Any]:
    request, batched = _request(args, params)
    spec = params["spec"]
    return _lowering.call(
        spec.tesseract, request, args, batched, platform, spec.gpu_transport, _site(spec, params["keep"])
    )


def _is_zero(t: Any) -> bool:
    return t is None or isinstance(t, ad.Zero)


def _filled(likes: Any, vectors: Any, present: Any) -> list[Any]:
    """Each vector where `present` says it is, else zeros like its partner in `likes`."""
    return [v if p else jnp.zeros_like(like) for like, v, p in zip(likes, vectors, present, strict=True)]


def _nondifferentiable_input(name: str) -> ValueError:
    return ValueError(
        f"Non-symbolic-zero tangent provided for non-differentiable input '{name}'. "
        f"If this input should be differentiable, mark it as "
        f"`Differentiable[...]` in the Tesseract input schema. Otherwise, "
        f"exclude it from the differentiated function's argument list "
        f"(using a closure or the `argnums` parameter), or apply "
        f"jax.lax.stop_gradient to it before passing to apply_tesseract."
    )


def _jvp(
    primals: Any, tangents: Any, *, spec: Spec, kind: str, avals: Any, batch: Any, **params: Any
) -> tuple[Any, Any]:
    if kind == "vjp":
        return _jvp_of_vjp(primals, tangents, spec=spec, avals=avals, batch=batch, **params)
    if kind != "apply":
        raise RuntimeError("Cannot take higher-order derivatives")
    has = tuple(not _is_zero(t) for t in tangents)
    for path, given in zip(spec.primal_paths, has, strict=True):
        name, differentiable = spec.input_name(path)
        if given and not differentiable:
            raise _nondifferentiable_input(name)
    full = _filled(primals, tangents, has)
    # Differentiated: a tesscpp Tesseract's apply keeps its forward for the
    # JVP, or for the VJP this JVP is transposed into (forward reuse).
    keep = batch is None and _lowering.reuses(spec.tesseract)
    out = bind(spec, "apply", primals, has, avals, batch=batch, keep=keep)
    tangent_batch = None if batch is None else (*batch, *batch)  # a tangent is batched as its primal
    out_tangents = bind(spec, "jvp", (*primals, *full), has, avals, batch=tangent_batch, keep=keep)
    return out, out_tangents


def _jvp_of_vjp(
    args: Any, tangents: Any, *, spec: Spec, has_tangent: Any, avals: Any, batch: Any, **_: Any
) -> tuple[Any, Any]:
    """Forward mode over a VJP uᵀJ(x): along (ẋ, u̇) it moves by the
    Tesseract's HVP (the derivative of uᵀJ along ẋ) plus the VJP of u̇, uᵀJ
    being linear in u. Needs the Tesseract's hessian_vector_product for ẋ."""
    if batch is not None:
        raise RuntimeError("Cannot take higher-order derivatives of a batch sent at once (vmap_method='parallel')")
    n = len(spec.primal_paths)
    primals, cotangents = args[:n], args[n:]
    along_x, along_u = tangents[:n], tangents[n:]
    out = bind(spec, "vjp", args, has_tangent, avals)
    terms = []
    has_x = tuple(not _is_zero(t) for t in along_x)
    if any(has_x):
        full_x = _filled(primals, along_x, has_x)
        terms.append(bind(spec, "hvp", (*primals, *cotangents, *full_x), (*has_tangent, *has_x), avals))
    has_u = tuple(not _is_zero(t) for t in along_u)
    if any(has_u):
        full_u = _filled(cotangents, along_u, has_u)
        terms.append(bind(spec, "vjp", (*primals, *full_u), (*has_tangent[:n], *has_u), avals))
    if not terms:
        return out, [jnp.zeros_like(p) for p in primals]
    return out, [sum(parts[1:], parts[0]) for parts in zip(*terms, strict=True)]


def _check_cotangents(spec: Spec, cotangents: Any, has_tangent: Any) -> None:
    for path, cotangent in zip(spec.out_paths, cotangents, strict=True):
        name, differentiable = spec.output_name(path)
        if not differentiable and not _is_zero(cotangent):
            raise ValueError(
                f"Non-symbolic-zero cotangent passed for non-differentiable output '{name}'. "
                f"If this output should be differentiable, mark it as "
                f"`Differentiable[...]` in the Tesseract output schema. Otherwise, "
                f"exclude it from the function return value (using pop or has_aux=True), "
                f"or wrap it with jax.lax.stop_gradient to produce a symbolic zero."
            )
    for path, wanted in zip(spec.primal_paths, has_tangent, strict=True):
        name, differentiable = spec.input_name(path)
        if wanted and not differentiable:
            raise _nondifferentiable_input(name)


def _transpose(
    cotangents: Any,
    *args: Any,
    spec: Spec,
    kind: str,
    has_tangent: Any,
    avals: Any,
    batch: Any,
    keep: bool = False,
    **_: Any,
) -> list[Any]:
    if kind in ("vjp", "hvp"):
        return _transpose_second(
            cotangents, args, spec=spec, kind=kind, has_tangent=has_tangent, avals=avals, batch=batch
        )
    assert kind == "jvp"
    n = len(spec.primal_paths)
    primals = args[:n]
    _check_cotangents(spec, cotangents, has_tangent)
    lead = () if batch is None else (_batch_size(primals, batch[:n]),)
    has = (*has_tangent[:n], *(not _is_zero(c) for c in cotangents))
    full = [jnp.zeros((*lead, *a.shape), a.dtype) if _is_zero(c) else c for a, c in zip(avals, cotangents, strict=True)]
    vjp_batch = None if batch is None else (*batch[:n], *(True,) * len(avals))
    grads = bind(spec, "vjp", (*primals, *full), has, avals, batch=vjp_batch, keep=keep) if any(has[n:]) else None
    out: list[Any] = [None] * n
    for i in range(n):
        if not (has_tangent[i] and ad.is_undefined_primal(args[n + i])):
            out.append(None)
        elif grads is None:
            out.append(jnp.zeros(primals[i].shape, primals[i].dtype))
        elif batch is not None and not batch[i]:  # a primal shared by the batch: its elements' gradients add up
            out.append(jnp.sum(grads[i], axis=0))
        else:
            out.append(grads[i])
    return out


def _transpose_second(
    cotangents: Any, args: Any, *, spec: Spec, kind: str, has_tangent: Any, avals: Any, batch: Any
) -> list[Any]:
    """Reverse mode over a VJP (reverse over reverse): the VJP uᵀJ is linear
    in u, its transpose in u is the JVP J·g; the HVP is linear in its tangent
    v and, on one set of inputs, symmetric: its transpose in v is the HVP of g
    with the wanted and the moved sets swapped (docs/derivatives.md §1)."""
    if batch is not None:
        raise RuntimeError("Cannot take higher-order derivatives of a batch sent at once (vmap_method='parallel')")
    n, m = len(spec.primal_paths), len(avals)
    primals = args[:n]
    if any(ad.is_undefined_primal(p) for p in primals):
        raise RuntimeError("Cannot take higher-order derivatives: the point itself is not linear")
    wanted = tuple(has_tangent[:n])
    has_g = tuple(w and not _is_zero(c) for w, c in zip(wanted, cotangents, strict=True))
    full_g = _filled(primals, cotangents, has_g)
    if kind == "vjp":  # transposed in u: J g on every output with an undefined cotangent argument
        out: list[Any] = [None] * n
        answered = [ad.is_undefined_primal(a) for a in args[n:]]
        jvp = bind(spec, "jvp", (*primals, *full_g), has_g, avals) if any(has_g) else None
        for j, undefined in enumerate(answered):
            out.append(
                None if not undefined else jvp[j] if jvp is not None else jnp.zeros(avals[j].shape, avals[j].dtype)
            )
        return out
    # hvp, transposed in its tangents v (the cotangents u are constants here).
    cotangent_args = args[n : n + m]
    if any(ad.is_undefined_primal(c) for c in cotangent_args):
        raise RuntimeError("Cannot take higher-order derivatives: third order")
    moved = tuple(has_tangent[n + m :])
    swapped = (*moved, *has_tangent[n : n + m], *has_g)
    hvp = bind(spec, "hvp", (*primals, *cotangent_args, *full_g), swapped, avals) if any(has_g) else None
    out = [None] * (n + m)
    for i, undefined in enumerate(ad.is_undefined_primal(a) for a in args[n + m :]):
        out.append(None if not undefined else hvp[i] if hvp is not None else jnp.zeros_like(primals[i]))
    return out


tesseract_p.def_abstract_eval(_abstract_eval)
tesseract_p.def_impl(_impl)
mlir.register_lowering(tesseract_p, mlir.lower_fun(functools.partial(_lower, platform="cpu"), multiple_results=True))
mlir.register_lowering(
    tesseract_p, mlir.lower_fun(functools.partial(_lower, platform="cuda"), multiple_results=True), platform="cuda"
)
ad.primitive_jvps[tesseract_p] = _jvp
ad.primitive_transposes[tesseract_p] = _transpose
batching.primitive_batchers[tesseract_p] = functools.partial(_batching.batch, bind)
