"""How a Tesseract is opened: tesseract_core's constructors (``from_url``,
``from_source``, ``from_image``) and tesscpp's ``from_library``, as a base of
:class:`tesscpp.Tesseract`. Served ones only record their options here; the
server starts in ``Tesseract.serve``."""

from __future__ import annotations

import collections
import os
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _tesscpp

if TYPE_CHECKING:  # annotations only (Python 3.10 has no typing.Self)
    from typing_extensions import Self

# The SDK's default startup timeout for from_source, in seconds.
DEFAULT_STARTUP_TIMEOUT = 60.0


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


class _Shared:
    """What a Tesseract and its with_encoding views share: the OpenAPI document,
    converted to Python once, and the GPU transports already warned about."""

    def __init__(self) -> None:
        self.schema: dict | None = None
        self.warned_transports: set[str] = set()
        # Forward-reuse references the caller is done with, sent with the
        # next call that takes part in forward reuse. A deque, not a list
        # under a lock: finalizers add to it, and one may run (the cyclic GC)
        # on a thread that is taking from it.
        self.done_residuals: collections.deque[str] = collections.deque()


class Openers:
    """The constructors of :class:`tesscpp.Tesseract`, and the state they set."""

    _core: _tesscpp._Tesseract | None = None
    _shared: _Shared
    _spawn: dict | None = None
    _spawn_backend: str = ""
    _finalizer: weakref.finalize | None = None
    _lastlog: str | None = None
    _in_process: bool = False
    _url: str = ""

    @classmethod
    def _wrap(cls, core: _tesscpp._Tesseract, *, in_process: bool = False) -> Self:
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
    ) -> Self:
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
    ) -> Self:
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
    ) -> Self:
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
    ) -> Self:
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
