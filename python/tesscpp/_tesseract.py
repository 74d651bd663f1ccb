"""The Tesseract class: tesseract_core's public interface over tesscpp's C++ client.

Names and signatures follow ``tesseract_core.Tesseract`` (1.15), so code moves
over by changing its import. Calls go through the ``_tesscpp`` extension: the
GIL is released while they run, arrays cross without copies where the memory
allows it, and answers come back as NumPy arrays the caller owns.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _tesscpp

# The SDK's default startup timeout for from_source, in seconds.
DEFAULT_STARTUP_TIMEOUT = 60.0


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


def _rebuild_validation_error(failure: _tesscpp.ValidationFailure, endpoint: str) -> Exception:
    """pydantic's ValidationError for a 422, as tesseract_core raises it.

    Without pydantic installed, the tesscpp exception (a ValueError carrying
    the same message and ``errors``) is raised as it is.
    """
    _, title, errors = failure.args
    failure.errors = errors
    title = title or f"endpoint {endpoint}"
    try:
        from pydantic import ValidationError
        from pydantic_core import InitErrorDetails, PydanticCustomError
    except ImportError:
        return failure
    details = [
        InitErrorDetails(
            type=PydanticCustomError(e["type"], e["msg"], e["ctx"]),
            loc=e["loc"],
            input=e["input"],
        )
        for e in errors
    ]
    return ValidationError.from_exception_data(title, line_errors=details)


def _call(method: Callable[..., Any], *args: Any, endpoint: str | None = None) -> Any:
    """Run a C++ call, turning a validation failure into pydantic's error."""
    try:
        return method(*args)
    except _tesscpp.ValidationFailure as failure:
        raise _rebuild_validation_error(failure, endpoint or method.__name__) from None


def _log_sink(stream_logs: bool | Callable[[str], Any]) -> Callable[[str], Any] | None:
    """The SDK's stream_logs: True prints to stdout, a callable gets each line."""
    if callable(stream_logs):
        return stream_logs
    if stream_logs:
        return lambda line: print(line, file=sys.stdout, flush=True)
    return None


def _timeouts(timeout: float | tuple[float, float] | None) -> tuple[float, float]:
    """(connect, read) seconds from the SDK's timeout argument; read 0 = no limit."""
    if timeout is None:
        return 10.0, 0.0
    if isinstance(timeout, tuple):
        return float(timeout[0]), float(timeout[1])
    return float(timeout), float(timeout)


def _serve_config(
    input_path: str | Path | None,
    output_path: str | Path | None,
    output_format: str,
    gpu_transport: str | None,
    runtime_config: dict[str, Any] | None,
    startup_timeout: float,
    timeout: float | tuple[float, float] | None,
    binref_pool: bool,
    stream_logs: bool | Callable[[str], Any],
    token: str | None,
) -> dict[str, Any]:
    """What from_source and from_image pass alike to the C++ side (its ServeOptions)."""
    connect, read = _timeouts(timeout)
    return {
        "input_path": str(input_path or ""),
        "output_path": str(output_path or ""),
        "output_format": output_format,
        "gpu_transport": gpu_transport,
        "runtime_config": dict(runtime_config or {}),
        "startup_timeout": float(startup_timeout),
        "connect_timeout": connect,
        "read_timeout": read,
        "binref_pool": binref_pool,
        "stream_logs": _log_sink(stream_logs),
        "token": token or "",
    }


# The component endpoints' rows of the C++ endpoint table, by name.
_ENDPOINTS = {row["name"]: row for row in _tesscpp.endpoint_rows()}


class _Shared:
    """What a Tesseract and its with_encoding views share: the OpenAPI document,
    converted to Python once, and the GPU transports already warned about."""

    def __init__(self) -> None:
        self.schema: dict | None = None
        self.warned_transports: set[str] = set()


class Tesseract:
    """A Tesseract reached over HTTP, served by a process this object owns, or
    loaded into this process (C++ component libraries).

    Create one with :meth:`from_url`, :meth:`from_image`, :meth:`from_source`
    or :meth:`from_library`; served ones are used inside ``with`` (or after
    :meth:`serve`).
    """

    _core: _tesscpp._Tesseract | None = None
    _shared: _Shared
    _spawn: dict | None = None
    _spawn_backend: str = ""
    _finalizer: weakref.finalize | None = None
    _lastlog: str | None = None
    _in_process: bool = False
    _url: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "Tesseract cannot be instantiated directly. Use Tesseract.from_url(), "
            "Tesseract.from_image(), Tesseract.from_source() or Tesseract.from_library() instead."
        )

    # -- constructors --------------------------------------------------------

    @classmethod
    def _wrap(cls, core: _tesscpp._Tesseract, *, in_process: bool = False) -> Tesseract:
        obj = cls.__new__(cls)
        obj._core = core
        obj._shared = _Shared()
        obj._in_process = in_process
        obj._url = core.url
        return obj

    @classmethod
    def from_url(
        cls,
        url: str,
        server_output_path: str | Path | None = None,
        timeout: float | tuple[float, float] | None = None,
        *,
        server_input_path: str | Path | None = None,
        output_format: str | None = None,
        gpu_transport: str | None = None,
        compression: str | None = None,
        stream_logs: bool | Callable[[str], Any] = False,
        experimental_binref_pool: bool = False,
        connection_pool_size: int = 10,
        token: str | None = None,
    ) -> Tesseract:
        """A Tesseract served at ``url``. Nothing is sent until the first call.

        Args:
            url: where it is served (``host:port`` gets ``http://``).
            server_output_path: the server's output directory as seen from here;
                needed to read json+binref answers and to stream logs.
            timeout: seconds for connecting and reading, or ``(connect, read)``;
                None waits as long as the endpoint runs.
            server_input_path: the server's input directory as seen from here;
                with ``output_format="json+binref"`` input arrays are written
                there as files (removed after each call).
            output_format, gpu_transport, compression: what calls request
                (checked against what the server advertises).
            stream_logs: True prints each line the endpoint prints; a callable
                receives them instead (needs ``server_output_path``).
            experimental_binref_pool: reuse pre-faulted buffers for json+binref
                on a tmpfs directory.
            connection_pool_size: idle kept-alive connections kept for reuse.
                Calls from several threads run at once, each on a connection
                of its own (the GIL is released), as on a requests Session.
            token: sent as ``Authorization: Bearer <token>`` with every
                request, for a server started with ``--token-file``.
        """
        connect, read = _timeouts(timeout)
        core = _tesscpp._Tesseract.from_url(
            str(url),
            connect,
            read,
            str(server_output_path or ""),
            str(server_input_path or ""),
            experimental_binref_pool,
            output_format,
            gpu_transport,
            compression,
            _log_sink(stream_logs),
            int(connection_pool_size),
            token or "",
        )
        return cls._wrap(core)

    @classmethod
    def from_source(
        cls,
        tesseract_api: str | Path,
        input_path: str | Path | None = None,
        output_path: str | Path | None = None,
        output_format: str = "json+base64",
        gpu_transport: str | None = None,
        runtime_config: dict[str, Any] | None = None,
        stream_logs: bool | Callable[[str], Any] = False,
        python_executable: str | Path | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        experimental_binref_pool: bool = False,
        *,
        timeout: float | tuple[float, float] | None = None,
        token: str | None = None,
        python_runtime: str = "tesscpp",
    ) -> Tesseract:
        """A Tesseract served by its own process, started by :meth:`serve` or ``with``.

        ``tesseract_api`` is a C++ component library (``lib<name>.so``, served by
        ``tesscpp serve``) or a ``tesseract_api.py``, hosted by
        ``python_executable`` (default: this interpreter, which then needs
        ``tesseract-core[runtime]``) and served by tesscpp's runtime
        (``tesscpp serve tesseract_api.py``), or by tesseract-core's with
        ``python_runtime="tesseract-runtime"``. The server
        runs in debug mode, as the SDK's does; its temporary directories go when
        it stops. With ``token``, a tesscpp server requires it
        (``Authorization: Bearer``) and every call sends it.
        """
        path = Path(tesseract_api).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"No Tesseract API or component library at {path}")
        obj = cls.__new__(cls)
        obj._shared = _Shared()
        obj._spawn = {
            "path": str(path),
            "python_executable": str(python_executable or sys.executable),
            "python_runtime": python_runtime,
            "tesscpp_executable": os.path.abspath(os.environ["TESSCPP_CLI"]) if os.environ.get("TESSCPP_CLI") else "",
            **_serve_config(input_path, output_path, output_format, gpu_transport, runtime_config, startup_timeout,
                            timeout, experimental_binref_pool, stream_logs, token),
        }
        obj._spawn_backend = "source"
        return obj

    @classmethod
    def from_image(
        cls,
        image_name: str,
        *,
        host_ip: str = "127.0.0.1",
        port: str | None = None,
        network: str | None = None,
        network_alias: str | None = None,
        volumes: list[str] | None = None,
        environment: dict[str, str] | None = None,
        gpus: list[str] | None = None,
        num_workers: int = 1,
        user: str | None = None,
        memory: str | None = None,
        input_path: str | Path | None = None,
        output_path: str | Path | None = None,
        output_format: str = "json+base64",
        gpu_transport: str | None = None,
        docker_args: list[str] | None = None,
        runtime_config: dict[str, Any] | None = None,
        stream_logs: bool | Callable[[str], Any] = False,
        skip_health_check: bool = False,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        timeout: float | tuple[float, float] | None = None,
        experimental_binref_pool: bool = False,
        token: str | None = None,
    ) -> Tesseract:
        """A Tesseract image served in a container, started by :meth:`serve` or ``with``.

        The arguments are tesseract-core 1.15's ``from_image`` arguments, and
        the container is started as it starts one (``<image> serve --port 8000
        --host 0.0.0.0``, the input and output directories mounted at
        ``/tesseract/input_data`` and ``/tesseract/output_data``, run as this
        process's user unless ``user`` says otherwise, debug mode on). The
        engine is ``$TESSERACT_DOCKER_EXECUTABLE`` (default ``docker``) reaching
        ``$DOCKER_HOST``. The container is removed by :meth:`teardown`, when
        this object is collected, at interpreter exit, and, by a watcher
        process, when this process dies without any of those. Its log stays
        readable through :meth:`server_logs`.

        ``port`` is a port (``"8080"``) or a range (``"9000-9100"``); None
        picks a free one. ``gpus`` is ``["all"]`` or device ids. With
        ``token``, a tesscpp image's server requires it
        (``TESSERACT_API_TOKEN`` in the container) and every call sends it.
        """
        if not isinstance(image_name, str) or not image_name:
            raise ValueError("Tesseract image name must be provided")
        if isinstance(gpus, (str, int)):
            gpus = [gpus]
        obj = cls.__new__(cls)
        obj._shared = _Shared()
        obj._spawn = {
            "image": image_name,
            "host_ip": host_ip,
            "port": str(port or ""),
            "network": network or "",
            "network_alias": network_alias or "",
            "volumes": [str(v) for v in (volumes or [])],
            "environment": dict(environment or {}),
            "gpus": [str(g) for g in (gpus or [])],
            "num_workers": int(num_workers),
            "user": str(user or ""),
            "memory": str(memory or ""),
            "docker_args": [str(a) for a in (docker_args or [])],
            "skip_health_check": bool(skip_health_check),
            **_serve_config(input_path, output_path, output_format, gpu_transport, runtime_config, startup_timeout,
                            timeout, experimental_binref_pool, stream_logs, token),
        }
        obj._spawn_backend = "image"
        return obj

    @classmethod
    def from_library(
        cls,
        path: str | Path,
        *,
        output_path: str | Path | None = None,
        gpu_transport: str | None = None,
        runtime_config: dict[str, Any] | None = None,
        stream_logs: bool | Callable[[str], Any] = False,
    ) -> Tesseract:
        """A C++ component library loaded into this process (the analogue of
        tesseract_core's ``from_tesseract_api``): calls run the component
        directly, with the same validation and results as served, and no
        HTTP or serialisation."""
        core = _tesscpp._Tesseract.from_library(
            str(path),
            str(output_path or ""),
            gpu_transport,
            dict(runtime_config or {}),
            _log_sink(stream_logs),
        )
        return cls._wrap(core, in_process=True)

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

    # -- endpoints -------------------------------------------------------------

    # Each typed method builds its request from the endpoint's row of the C++
    # endpoint table and sends it through the one generic call.

    def call(self, endpoint: str, body: dict, run_id: str | None = None) -> dict:
        """Post `body`, a whole request, to the component endpoint `endpoint`
        (its path without '/'): for endpoints without a method below."""
        return _call(self._client.call, endpoint, body, run_id, endpoint=endpoint)

    def _gradient(
        self,
        endpoint: str,
        inputs: dict,
        paths_in: list[str],
        paths_out: list[str],
        vector: dict | None,
        run_id: str | None,
    ) -> dict:
        row = _ENDPOINTS[endpoint]
        body: dict[str, Any] = {
            "inputs": inputs,
            f"{row['short_name']}_inputs": list(paths_in),
            f"{row['short_name']}_outputs": list(paths_out),
        }
        if row["vector_field"]:
            body[row["vector_field"]] = vector
        return self.call(endpoint, body, run_id)

    def apply(self, inputs: dict, run_id: str | None = None) -> dict:
        return self.call("apply", {"inputs": inputs}, run_id)

    def abstract_eval(self, abstract_inputs: dict) -> dict:
        return self.call("abstract_eval", {"inputs": abstract_inputs})

    def health(self) -> dict:
        return _call(self._client.health)

    def jacobian(
        self,
        inputs: dict,
        jac_inputs: list[str],
        jac_outputs: list[str],
        run_id: str | None = None,
    ) -> dict:
        return self._gradient("jacobian", inputs, jac_inputs, jac_outputs, None, run_id)

    def jacobian_vector_product(
        self,
        inputs: dict,
        jvp_inputs: list[str],
        jvp_outputs: list[str],
        tangent_vector: dict,
        run_id: str | None = None,
    ) -> dict:
        return self._gradient("jacobian_vector_product", inputs, jvp_inputs, jvp_outputs, tangent_vector, run_id)

    def vector_jacobian_product(
        self,
        inputs: dict,
        vjp_inputs: list[str],
        vjp_outputs: list[str],
        cotangent_vector: dict,
        run_id: str | None = None,
    ) -> dict:
        return self._gradient("vector_jacobian_product", inputs, vjp_inputs, vjp_outputs, cotangent_vector, run_id)

    def test(self, test_spec: dict) -> None:
        """Run a TestSpec on the debug-mode /test endpoint: AssertionError when it
        fails, RuntimeError when it errors."""
        status, message = _call(self._client.test, test_spec)
        if status == "failed":
            raise AssertionError(message)
        if status == "error":
            raise RuntimeError(message)

    def __repr__(self) -> str:
        where = "in-process" if self._in_process else (self._url or "not served")
        return f"<tesscpp.Tesseract {where}>"
