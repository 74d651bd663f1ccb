"""The Tesseract class: tesseract_core's public interface over tesscpp's C++ client.

Names and signatures follow ``tesseract_core.Tesseract`` (1.15), so code moves
over by changing its import. Calls go through the ``_tesscpp`` extension: the
GIL is released while they run, arrays cross without copies where the memory
allows it, and answers come back as NumPy arrays the caller owns.
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass
from typing import Any

from . import _tesscpp
from ._endpoint_calls import EndpointCalls
from ._opening import Openers, _Shared


@dataclass(frozen=True)
class ServerCapabilities:
    """The encodings a served Tesseract advertises (None: not advertised)."""

    output_formats: tuple[str, ...] | None
    gpu_transports: tuple[str, ...] | None
    compressions: tuple[str, ...] | None


@dataclass(frozen=True)
class ContainerInfo:
    """The container serving a Tesseract made by ``from_image``."""

    id: str
    name: str
    image: str
    status: str
    host_ip: str
    host_port: int
    url: str
    attrs: dict


@dataclass(frozen=True)
class RequestedEncoding:
    """The encoding calls through a Tesseract request; None leaves it to the server."""

    output_format: str | None = None
    gpu_transport: str | None = None
    compression: str | None = None


class Tesseract(Openers, EndpointCalls):
    """A Tesseract reached over HTTP, served by a process this object owns, or
    loaded into this process (C++ component libraries).

    Create one with :meth:`from_url`, :meth:`from_image`, :meth:`from_source`
    or :meth:`from_library`; served ones are used inside ``with`` (or after
    :meth:`serve`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "Tesseract cannot be instantiated directly. Use Tesseract.from_url(), "
            "Tesseract.from_image(), Tesseract.from_source() or Tesseract.from_library() instead."
        )

    # -- serving -------------------------------------------------------------

    def __enter__(self) -> Tesseract:
        if self._spawn is not None and self._core is None:
            self.serve()
        return self

    def __exit__(self, *args: object) -> None:
        if self._spawn is not None and self._core is not None:
            self.teardown()

    def serve(self) -> None:
        """Start the server of a Tesseract made by :meth:`from_image` or :meth:`from_source`."""
        if self._spawn is None:
            raise RuntimeError("Can only serve a Tesseract created via `from_image` or `from_source`.")
        if self._core is not None:
            raise RuntimeError("Tesseract is already being served.")
        if self._spawn_backend == "image":
            core = _tesscpp._Tesseract.from_image(**self._spawn)
        else:
            core = _tesscpp._Tesseract.from_source(**self._spawn)
        self._core = core
        self._url = core.url
        self._shared = _Shared()
        self._lastlog = None
        # Stopped when this object is collected or the interpreter exits, if
        # teardown() was never called (the finalizer must not hold self).
        self._finalizer = weakref.finalize(self, core.teardown)

    def teardown(self) -> None:
        """Stop the server (remove the container) and its temporary directories."""
        if self._spawn is None or self._core is None:
            raise RuntimeError("Tesseract is not being served.")
        self._core.teardown()
        self._lastlog = self._core.server_logs()
        self._core = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    def server_logs(self) -> str:
        """What the server printed (kept after teardown)."""
        if self._spawn is None:
            raise RuntimeError(
                "Can only retrieve logs for a Tesseract created via `from_image` or `from_source`."
            )
        if self._core is None:
            return self._lastlog or ""
        return self._core.server_logs()

    def container_info(self) -> ContainerInfo:
        """The container serving a Tesseract made by :meth:`from_image`, as the
        engine describes it now (``attrs`` is its ``inspect`` document)."""
        if self._spawn_backend != "image":
            raise RuntimeError("`container_info` is only available when using `Tesseract.from_image(...)`.")
        if self._core is None:
            raise RuntimeError(
                "`container_info` is only available for served Tesseracts. Use `tess.serve()` or `with tess:` first."
            )
        return ContainerInfo(**self._core.container_info())

    # -- what the Tesseract offers --------------------------------------------

    @property
    def url(self) -> str:
        """Where calls go ("" in-process; not served yet: "")."""
        return self._url

    @property
    def _client(self) -> _tesscpp._Tesseract:
        if self._core is None:
            raise RuntimeError(
                "No client connected to a Tesseract. Use the Tesseract as a context "
                "manager (`with Tesseract.from_source(...) as tess:`) or call `.serve()`."
            )
        return self._core

    @property
    def openapi_schema(self) -> dict:
        """The OpenAPI document (fetched once per connection)."""
        client = self._client
        if self._shared.schema is None:
            self._shared.schema = client.openapi_schema()
        return self._shared.schema

    @property
    def available_endpoints(self) -> list[str]:
        return [endpoint.lstrip("/") for endpoint in self.openapi_schema["paths"]]

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """What the server advertises; None for in-process Tesseracts."""
        advertised = self._client.capabilities()
        return None if advertised is None else ServerCapabilities(*advertised)

    @property
    def current_encoding(self) -> RequestedEncoding:
        return RequestedEncoding(*self._client.current_encoding())

    def with_encoding(
        self,
        *,
        output_format: str | None = None,
        gpu_transport: str | None = None,
        compression: str | None = None,
    ) -> Tesseract:
        """A view requesting another encoding, sharing this connection.

        Raises ValueError when the server does not advertise a requested value.
        """
        view = Tesseract.__new__(Tesseract)
        view._core = self._client.with_encoding(output_format, gpu_transport, compression)
        view._shared = self._shared
        view._in_process = self._in_process
        view._url = self._url
        return view

    def resolve_gpu_transport(self) -> str:
        """The GPU transport calls through this Tesseract should use for GPU arrays.

        As tesseract-core 1.15: a Tesseract that requests a transport gets it
        if the check exchange with the server passes, and RuntimeError
        otherwise; one that requests none gets ``cuda_ipc`` when the server
        offers it and the check passes (the client's automatic transports, in
        order), else ``none`` (GPU arrays copied to the host) with a one-time
        warning. The check runs once per connection.
        In-process Tesseracts return the transport they were created with.
        """
        transport, fallback_reason, failed = self._client.resolve_gpu_transport()
        if fallback_reason is not None and failed not in self._shared.warned_transports:
            self._shared.warned_transports.add(failed)
            warnings.warn(
                f"The Tesseract at {self._url} offers gpu_transport={failed!r}, but it does not "
                "work from this process, so GPU arrays are copied to the host instead: "
                f"{fallback_reason}",
                UserWarning,
                stacklevel=2,
            )
        return transport

    def __repr__(self) -> str:
        where = "in-process" if self._in_process else (self._url or "not served")
        return f"<tesscpp.Tesseract {where}>"
