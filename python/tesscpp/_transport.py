"""Which GPU transport one call of a framework bridge (tesscpp.torch, tesscpp.jax) uses."""

from __future__ import annotations

from typing import Any

from . import _tesscpp

# The GPU transports the bridges can drive: "none" and every one the C++
# client implements (its transport registry).
SUPPORTED_GPU_TRANSPORTS = tuple(_tesscpp.gpu_transports())


def choose_transport(tesseract: Any, requested: str | None, has_cuda: bool) -> str:
    """The transport of one call: "none" (host copies) or a device transport.

    Calls without CUDA tensors never ask; an explicit argument wins; otherwise
    the Tesseract decides through resolve_gpu_transport (tesseract-core 1.15's
    rules: what it requests once known to work, else what the server offers and
    works, else "none").
    """
    if not has_cuda or requested == "none":
        return "none"
    in_process = tesseract.server_capabilities is None
    if requested is not None:
        if in_process:
            created = tesseract.resolve_gpu_transport()
            return requested if created == requested else "none"
        return with_transport(tesseract, requested).resolve_gpu_transport()
    resolve = getattr(tesseract, "resolve_gpu_transport", None)
    resolved = resolve() if resolve is not None else "none"
    if resolved not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(
            f"The Tesseract requests gpu_transport={resolved!r}, which apply_tesseract "
            f"cannot drive (supported: {list(SUPPORTED_GPU_TRANSPORTS)}). Pass "
            "tesseract.with_encoding(gpu_transport='none') to copy CUDA tensors to "
            "the host instead."
        )
    return resolved


def with_transport(tesseract: Any, transport: str) -> Any:
    """The Tesseract, or a view of it, whose calls use ``transport``.

    A view per call keeps one call's transport from leaking into others that
    share the Tesseract; in-process Tesseracts encode nothing and are used as
    they are.
    """
    if tesseract.server_capabilities is None:
        return tesseract
    if (tesseract.current_encoding.gpu_transport or "none") == transport:
        return tesseract
    return tesseract.with_encoding(gpu_transport=transport)
