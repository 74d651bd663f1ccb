"""The ``tesscpp_tesseract`` primitive and its rules.

One primitive stands for the four endpoints (``kind``: apply, jvp, vjp,
jacobian). Its arguments are the input leaves JAX traces (the primals),
followed for jvp by one tangent per primal and for vjp by one cotangent per
output. Forward mode turns an apply into a jvp, transposition turns a jvp
into a vjp, and vmap goes through ``_batching``: the semantics of
tesseract-jax 0.4.0's ``apply_tesseract``, including its error texts.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import extend
from jax.interpreters import ad, batching, mlir

from . import _batching, _lowering
from ._request import Spec, build, send

tesseract_p = extend.core.Primitive("tesscpp_tesseract")
tesseract_p.multiple_results = True

_ENDPOINT = {
    "apply": "apply",
    "jvp": "jacobian_vector_product",
    "vjp": "vector_jacobian_product",
    "jacobian": "jacobian",
}


def bind(
    spec: Spec, kind: str, args: Any, has_tangent: tuple[bool, ...], avals: tuple[Any, ...], jac: Any = None
) -> Any:
    return tesseract_p.bind(*args, spec=spec, kind=kind, has_tangent=has_tangent, avals=avals, jac=jac)


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


def _abstract_eval(*args: Any, spec: Spec, kind: str, has_tangent: Any, avals: Any, jac: Any) -> tuple[Any, ...]:
    n = len(spec.primal_paths)
    if kind == "vjp":
        return tuple(jax.core.ShapedArray(a.shape, a.dtype) for a in args[:n])
    if kind == "jacobian":
        return _jacobian_avals(spec, args[:n], avals, jac)
    return tuple(jax.core.ShapedArray(a.shape, a.dtype) for a in avals)


def _result_avals(args: tuple[Any, ...], **params: Any) -> tuple[Any, ...]:
    return _abstract_eval(*(jax.typeof(a) for a in args), **params)


def _impl(*args: Any, spec: Spec, kind: str, has_tangent: Any, avals: Any, jac: Any) -> list[Any]:
    _require(spec, kind)
    params = {"spec": spec, "kind": kind, "has_tangent": has_tangent, "avals": avals, "jac": jac}
    request = build(spec, kind, has_tangent, _result_avals(args, **params), jac)
    return [jnp.asarray(r) for r in send(spec.tesseract, request, [args[i] for i in request.take])]


def _lower(*args: Any, spec: Spec, kind: str, has_tangent: Any, avals: Any, jac: Any) -> list[Any]:
    _require(spec, kind)
    params = {"spec": spec, "kind": kind, "has_tangent": has_tangent, "avals": avals, "jac": jac}
    request = build(spec, kind, has_tangent, _result_avals(args, **params), jac)
    return _lowering.call(spec.tesseract, request, args)


def _is_zero(t: Any) -> bool:
    return t is None or isinstance(t, ad.Zero)


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
    primals: Any, tangents: Any, *, spec: Spec, kind: str, has_tangent: Any, avals: Any, jac: Any
) -> tuple[Any, Any]:
    if kind != "apply":
        raise RuntimeError("Cannot take higher-order derivatives")
    has = tuple(not _is_zero(t) for t in tangents)
    for path, given in zip(spec.primal_paths, has, strict=True):
        name, differentiable = spec.input_name(path)
        if given and not differentiable:
            raise _nondifferentiable_input(name)
    full = [jnp.zeros(p.shape, p.dtype) if _is_zero(t) else t for p, t in zip(primals, tangents, strict=True)]
    out = bind(spec, "apply", primals, has, avals)
    out_tangents = bind(spec, "jvp", (*primals, *full), has, avals)
    return out, out_tangents


def _transpose(cotangents: Any, *args: Any, spec: Spec, kind: str, has_tangent: Any, avals: Any, jac: Any) -> list[Any]:
    assert kind == "jvp"
    n = len(spec.primal_paths)
    primals = args[:n]
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
    has = (*has_tangent, *(not _is_zero(c) for c in cotangents))
    full = [jnp.zeros(a.shape, a.dtype) if _is_zero(c) else c for a, c in zip(avals, cotangents, strict=True)]
    grads = bind(spec, "vjp", (*primals, *full), has, avals) if any(has[n:]) else None
    out: list[Any] = [None] * n
    for i in range(n):
        if has_tangent[i] and ad.is_undefined_primal(args[n + i]):
            out.append(grads[i] if grads is not None else jnp.zeros(primals[i].shape, primals[i].dtype))
        else:
            out.append(None)
    return out


tesseract_p.def_abstract_eval(_abstract_eval)
tesseract_p.def_impl(_impl)
mlir.register_lowering(tesseract_p, mlir.lower_fun(_lower, multiple_results=True))
ad.primitive_jvps[tesseract_p] = _jvp
ad.primitive_transposes[tesseract_p] = _transpose
batching.primitive_batchers[tesseract_p] = functools.partial(_batching.batch, bind)
