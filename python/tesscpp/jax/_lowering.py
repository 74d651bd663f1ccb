"""How a compiled program calls the Tesseract.

For a ``tesscpp.Tesseract`` the call is XLA's FFI custom call
``tesscpp_jax_call`` (``python/bindings/jax_ffi.cc``): the handler builds the
request from XLA's buffers and calls tesscpp's C++ client, with no Python and
no GIL. Any other Tesseract object (tesseract-core's) is called from a Python
callback, as tesseract-jax calls it. Either way the results the answer does
not hold (outputs that are not differentiable, under a JVP) are NaN, as in
tesseract-jax.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _tesscpp
from ._request import Request, send

_TARGET = "tesscpp_jax_call"
_MAX_AT_ONCE = 32  # elements of a batch sent at once, at most (as the custom call's kMaxAtOnce)


@functools.cache
def ffi_available() -> bool:
    """Whether this build has the custom call (it needs JAX's FFI headers when
    tesscpp is built); registers it with XLA the first time."""
    if not hasattr(_tesscpp, "_jax_ffi_target"):
        return False
    jax.ffi.register_ffi_target(_TARGET, _tesscpp._jax_ffi_target(), platform="cpu")
    return True


def ffi_calls() -> int:
    """How many times the custom call's handler ran in this process (0 when it is not built)."""
    return _tesscpp._jax_ffi_calls() if hasattr(_tesscpp, "_jax_ffi_calls") else 0


def ffi_requests_peak() -> int:
    """The most requests the custom call's handlers had under way at once (0 when it is not built)."""
    return _tesscpp._jax_requests_peak() if hasattr(_tesscpp, "_jax_requests_peak") else 0


def _client_of(tesseract: Any) -> Any:
    """The C++ client behind a tesscpp.Tesseract; None for other objects."""
    from .._tesseract import Tesseract

    return tesseract._client if isinstance(tesseract, Tesseract) else None


def send_all(tesseract: Any, request: Request, sent: list[Any], batched: list[bool] | None) -> list[np.ndarray]:
    """The request made from Python: once, or (`batched` naming the arguments
    that carry a batch) once per element, all at once on threads, stacked."""
    if batched is None:
        return send(tesseract, request, sent)
    size = next(np.shape(a)[0] for a, b in zip(sent, batched, strict=True) if b)

    def element(k: int) -> list[np.ndarray]:
        return send(tesseract, request, [np.asarray(a)[k] if b else a for a, b in zip(sent, batched, strict=True)])

    with ThreadPoolExecutor(max_workers=min(size, _MAX_AT_ONCE)) as pool:
        elements = list(pool.map(element, range(size)))
    return [np.stack([e[j] for e in elements]) for j in range(len(request.avals))]


def call(tesseract: Any, request: Request, args: tuple[Any, ...], batched: list[bool] | None = None) -> list[Any]:
    """The request's results, traced: the custom call or the callback. With
    `batched`, one call per element of the batch those arguments carry, sent
    at once (vmap_method="parallel"); the results carry the batch in front."""
    sent = [args[i] for i in request.take]
    lead = () if batched is None else (next(a.shape[0] for a, b in zip(sent, batched, strict=True) if b),)
    served = [k for k, path in enumerate(request.results) if path is not None]
    shapes = [jax.ShapeDtypeStruct((*lead, *request.avals[k].shape), request.avals[k].dtype) for k in served]
    only_served = replace(
        request, results=[request.results[k] for k in served], avals=[request.avals[k] for k in served]
    )
    client = _client_of(tesseract)
    if not served:
        answers: list[Any] = []
    elif client is not None and ffi_available():
        call_id = _tesscpp._jax_register_call(
            client, request.endpoint, request.body, request.arguments, only_served.results, batched or []
        )
        answers = list(jax.ffi.ffi_call(_TARGET, shapes, has_side_effect=True)(*sent, call_id=np.int64(call_id)))
    else:
        answers = list(jax.pure_callback(lambda *a: send_all(tesseract, only_served, list(a), batched), shapes, *sent))
    out = []
    for k, aval in enumerate(request.avals):
        out.append(answers.pop(0) if k in served else jnp.full((*lead, *aval.shape), jnp.nan, dtype=aval.dtype))
    return out
