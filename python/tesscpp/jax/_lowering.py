"""How a compiled program calls the Tesseract.

For a ``tesscpp.Tesseract`` the call is XLA's FFI custom call
``tesscpp_jax_call`` (``python/bindings/jax_ffi.cc``): the handler builds the
request from XLA's buffers and calls tesscpp's C++ client, with no Python and
no GIL. In a program on a CUDA device the handler takes XLA's device buffers
and stream: arrays go by IPC handle when the Tesseract's GPU transport check
passes (the choice of ``resolve_gpu_transport``, as in tesscpp.torch), and
through the host otherwise. Any other Tesseract object (tesseract-core's) is called from a Python
callback, as tesseract-jax calls it. Either way the results the answer does
not hold (outputs that are not differentiable, under a JVP) are NaN, as in
tesseract-jax.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _tesscpp
from .._transport import choose_transport, with_transport
from ._request import Request, send

_TARGET = "tesscpp_jax_call"
_MAX_AT_ONCE = 32  # elements of a batch sent at once, at most (as the custom call's kMaxAtOnce)


def _refusal() -> str | None:
    """Why this jaxlib cannot run the custom call, or None. XLA runs handlers
    built against its own FFI API version or an older one of the same major
    version; a handler built against a newer one makes XLA fail to start its
    backend at all, so the version is compared before registering."""
    built = tuple(_tesscpp._jax_ffi_api_version())
    try:
        header = (Path(jax.ffi.include_dir()) / "xla" / "ffi" / "api" / "c_api.h").read_text()
    except (AttributeError, OSError) as error:
        return f"this JAX has no XLA FFI headers to check ({error})"
    found = [re.search(rf"#define XLA_FFI_API_{part} (\d+)", header) for part in ("MAJOR", "MINOR")]
    if None in found:
        return "this jaxlib's XLA FFI headers name no API version"
    runtime = tuple(int(m.group(1)) for m in found if m is not None)
    if runtime[0] != built[0] or runtime[1] < built[1]:
        return (
            f"tesscpp was built against XLA FFI API {built[0]}.{built[1]}, "
            f"this jaxlib {importlib.metadata.version('jaxlib')} has {runtime[0]}.{runtime[1]}"
        )
    return None


def ffi_available(platform: str = "cpu") -> bool:
    """Whether the custom call can be used: registers it with XLA for
    `platform` (cpu, cuda) the first time. A jaxlib that cannot run it (older
    than the FFI headers tesscpp was built with) leaves tesscpp clients on the
    Python callback, with one warning."""
    return _registered(platform)


@functools.cache
def _registered(platform: str) -> bool:
    why = _refusal()
    if why is not None:
        warnings.warn(
            f"tesscpp.jax: the custom call cannot run here ({why}); tesscpp Tesseracts are called through "
            "a Python callback instead (slower). Upgrade jaxlib, or build tesscpp beside this JAX.",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    xla_platform = {"cpu": "cpu", "cuda": "CUDA"}[platform]
    jax.ffi.register_ffi_target(_TARGET, _tesscpp._jax_ffi_target(platform), platform=xla_platform)
    return True


def ffi_calls() -> int:
    """How many times the custom call's handler ran in this process."""
    return _tesscpp._jax_ffi_calls()


def ffi_requests_peak(reset: bool = False) -> int:
    """The most requests the custom call's handlers had under way at once
    since the last reset; `reset` reads it and starts a new count."""
    return _tesscpp._jax_requests_peak(reset)


def _client_of(tesseract: Any) -> Any:
    """The C++ client behind a tesscpp.Tesseract; None for other objects."""
    from .._tesseract import Tesseract

    return tesseract._client if isinstance(tesseract, Tesseract) else None


def reuses(tesseract: Any) -> bool:
    """Whether calls of `tesseract` take part in forward reuse
    (docs/forward-reuse.md): tesscpp Tesseracts; a server without the
    extension keeps nothing, and its derivative calls then refer to nothing."""
    return _client_of(tesseract) is not None


def _send_reusing(target: Any, request: Request, sent: list[Any], on_device: bool, site: int) -> list[Any]:
    """`send` taking part in forward reuse as call site `site`, through the
    references the custom call keeps per site (jax_ffi.cc's ReuseSites)."""
    from .._endpoint_calls import ForwardReuse

    apply = request.endpoint == "apply"
    keep, residuals, release = _tesscpp._jax_reuse_begin(site, apply)
    reuse = ForwardReuse(keep=keep, residuals=residuals, release=list(release))
    try:
        results = send(target, request, sent, on_device, reuse)
    except BaseException:
        if apply:
            _tesscpp._jax_reuse_finish(site, "", reuse.release, False)
        raise
    if apply:
        _tesscpp._jax_reuse_finish(site, reuse.residuals, [], True)
    return results


def cuda_device(arrays: list[Any]) -> Any:
    """The CUDA device the jax Arrays among `arrays` are on, or None."""
    for array in arrays:
        if isinstance(array, jax.Array):
            device = next(iter(array.devices()))
            if device.platform == "gpu":
                return device
    return None


def send_all(
    tesseract: Any,
    request: Request,
    sent: list[Any],
    batched: list[bool] | None,
    device: Any = None,
    gpu_transport: str | None = None,
    site: int = -1,
) -> list[Any]:
    """The request made from Python: once, or (`batched` naming the arguments
    that carry a batch) once per element, all at once on threads, stacked.
    With the CUDA `device` the arrays are on, they go by IPC handle where
    `gpu_transport` and the Tesseract allow (through the host otherwise); the
    results are on that device either way. `site` (>= 0): the call takes part
    in forward reuse as that call site's."""
    view = _device_view(tesseract, "cuda", gpu_transport) if device is not None else None
    target, on_device, stack = (tesseract, False, np.stack) if view is None else (view, True, jnp.stack)
    if batched is None and site >= 0 and reuses(target):
        results = _send_reusing(target, request, sent, on_device, site)
    elif batched is None:
        results = send(target, request, sent, on_device)
    else:
        size = next(np.shape(a)[0] for a, b in zip(sent, batched, strict=True) if b)

        def element(k: int) -> list[Any]:
            return send(target, request, [a[k] if b else a for a, b in zip(sent, batched, strict=True)], on_device)

        with ThreadPoolExecutor(max_workers=min(size, _MAX_AT_ONCE)) as pool:
            elements = list(pool.map(element, range(size)))
        results = [stack([e[j] for e in elements]) for j in range(len(request.avals))]
    return results if device is None else [jax.device_put(r, device) for r in results]


def _device_view(tesseract: Any, platform: str, gpu_transport: str | None) -> Any:
    """For arrays on a CUDA device: the view of a tesscpp.Tesseract that passes
    them by IPC handle, or None (other Tesseract objects, a transport of "none")."""
    if platform != "cuda" or _client_of(tesseract) is None:
        return None
    if choose_transport(tesseract, gpu_transport, has_cuda=True) == "none":
        return None
    return with_transport(tesseract, "cuda_ipc")


def call(
    tesseract: Any,
    request: Request,
    args: tuple[Any, ...],
    batched: list[bool] | None = None,
    platform: str = "cpu",
    gpu_transport: str | None = None,
    reuse_site: int = -1,
) -> list[Any]:
    """The request's results, traced for `platform`: the custom call or the
    callback. With `batched`, one call per element of the batch those
    arguments carry, sent at once (vmap_method="parallel"); the results carry
    the batch in front. `reuse_site` (>= 0): the call takes part in forward
    reuse as that call site's (docs/forward-reuse.md)."""
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
    elif client is not None and ffi_available(platform):
        call_id = _tesscpp._jax_register_call(
            client,
            request.endpoint,
            request.body,
            request.arguments,
            only_served.results,
            batched or [],
            getattr(_device_view(tesseract, platform, gpu_transport), "_client", None),
            reuse_site if batched is None else -1,
        )
        answers = list(jax.ffi.ffi_call(_TARGET, shapes, has_side_effect=True)(*sent, call_id=np.int64(call_id)))
    else:
        answers = list(
            jax.pure_callback(
                lambda *a: send_all(tesseract, only_served, list(a), batched, site=reuse_site), shapes, *sent
            )
        )
    out = []
    for k, aval in enumerate(request.avals):
        out.append(answers.pop(0) if k in served else jnp.full((*lead, *aval.shape), jnp.nan, dtype=aval.dtype))
    return out
