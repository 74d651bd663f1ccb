"""A tesseract_api.py served by tesscpp's runtime (docs/python-host.md).

``tesscpp serve tesseract_api.py`` execs ``python -m tesscpp._python_host``
with its arguments; this runs the same tesscpp commands in this interpreter
(``_tesscpp._run_commands``), and the runtime opens the module through
:class:`ModuleHost`. tesscpp's C++ server reads requests, decodes arrays and
encodes answers; what is Python's stays Python: the module is imported, and its
endpoints, request models and documents are built, by tesseract-core's own
code (``create_rest_api``), so validators, constraints and array types behave
as under tesseract-runtime.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from . import _hvp_route, reuse

# Routes the runtime answers itself; the module's endpoints are the others.
_RUNTIME_ROUTES = {"/health", "/test", "/openapi.json", "/docs", "/check_gpu_transport"}


def _accepts_anything(annotation: Any, seen: set[type]) -> bool:
    """Whether some place in ``annotation`` takes any Python object.

    There a NumPy array decoded by the C++ codec would be kept as it is where
    tesseract-runtime keeps the array's JSON dict, so such models are validated
    from the JSON text only.
    """
    if annotation is Any or annotation is object:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return False
        seen.add(annotation)
        return any(_accepts_anything(f.annotation, seen) for f in annotation.model_fields.values())
    if typing.get_origin(annotation) is typing.Annotated:
        return _accepts_anything(typing.get_args(annotation)[0], seen)
    return any(_accepts_anything(arg, seen) for arg in typing.get_args(annotation) if arg is not Ellipsis)


class _Endpoint:
    """One endpoint of the module as tesseract-runtime routes it."""

    def __init__(self, route: Any) -> None:
        self.name = route.path.lstrip("/")
        # serve.py wraps apply and the derivatives (functools.wraps): the
        # function under the wrapper is the endpoint without its HTTP part.
        self.function = getattr(route.endpoint, "__wrapped__", route.endpoint)
        self.body = route.dependant.body_params[0]
        self.fast = not _accepts_anything(self.body.field_info.annotation, set())
        # FastAPI serialises a returned model whole; serve.py's wrapper, the
        # fields that were set.
        self.exclude_unset = route.endpoint is not self.function

    def validate(self, value: Any) -> tuple[Any, list[dict[str, Any]]]:
        # What FastAPI does with a single body parameter.
        return self.body.validate(value, {}, loc=("body",))


class ModuleHost:
    """What tesscpp's runtime calls (python/bindings/python_component.cc)."""

    def __init__(self, path: str, settings: dict[str, Any]) -> None:
        from tesseract_core.runtime import config as runtime_config
        from tesseract_core.runtime import mpa
        from tesseract_core.runtime.core import check_tesseract_api, load_module_from_path
        from tesseract_core.runtime.serve import create_rest_api

        # An exec'd worker's handoff was taken (and unset) by the C++ side
        # before the module is opened; Python's copy of the environment, which
        # the module's subprocesses get, must not keep it either.
        os.environ.pop("TESSCPP_WORKER_HANDOFF", None)
        # tesseract-core's settings are ours, so that what its code builds
        # (titles, the test endpoint, transports) is what we serve.
        runtime_config.update_config(api_path=path, **settings)
        self._mpa = mpa
        self._mlflow = bool(runtime_config.get_config().mlflow_tracking_uri)
        before = _threads()
        module = load_module_from_path(path)
        # Threads the import left running, which forked workers would lack
        # (PythonComponent::Forkable: workers are exec'd afresh then).
        self.import_threads = len(_threads() - before)
        check_tesseract_api(module)
        self.app = create_rest_api(module)
        if hasattr(module, _hvp_route.NAME):  # tesscpp's own endpoint, which tesseract-core does not make
            from . import _tesscpp

            row = next(r for r in _tesscpp.endpoint_rows() if r["name"] == _hvp_route.NAME)
            _hvp_route.add_route(self.app, module, row["doc"])
        self.name = Path(path).resolve().parent.name or "tesseract_api"
        routes = [r for r in self.app.routes if getattr(r, "path", None) not in _RUNTIME_ROUTES]
        self._endpoints = {e.name: e for e in map(_Endpoint, routes)}
        self.endpoints = list(self._endpoints)
        self._adapters: dict[type, TypeAdapter[Any]] = {}
        _flush()

    def documents(self, formats: list[str], transports: list[str], compressions: list[str]) -> tuple[str, str]:
        """/openapi.json and /docs as FastAPI answers them, offering what our runtime offers."""
        from fastapi.openapi.docs import get_redoc_html
        from starlette.responses import JSONResponse

        schema = self.app.openapi()
        schema["x-supported-output-formats"] = list(formats)
        schema["x-supported-gpu-transports"] = list(transports)
        schema["x-supported-compressions"] = list(compressions)
        docs = get_redoc_html(openapi_url=self.app.openapi_url, title=f"{self.app.title} - ReDoc")
        return bytes(JSONResponse(schema).body).decode(), bytes(docs.body).decode()

    def validate(self, endpoint: str, value: Any, text: memoryview | None) -> tuple[Any, Any]:
        """(payload, None), or (None, (errors, body, status)): the answer refusing the body.

        ``value`` is the body with its arrays decoded by the C++ codec (NumPy
        arrays over the request's memory, device arrays as such), or None
        where the C++ reader could not read ``text`` exactly. Where it does
        not validate, the body is validated again as tesseract-runtime does,
        from its JSON text, so that the errors (and any success the arrays'
        JSON form allows) are exactly tesseract-runtime's.
        """
        e = self._endpoints[endpoint]
        errors: list[dict[str, Any]] = []
        unread = value is None and text is not None
        if (e.fast or text is None) and not unread:
            payload, errors = e.validate(value)
            if not errors:
                return payload, None
        if text is not None:
            parsed = _parse_body(bytes(text))
            if isinstance(parsed, _Unparsed):
                if not parsed.errors:
                    return None, (None, "There was an error parsing the body", 400)
                errors = parsed.errors
            else:
                payload, errors = e.validate(parsed)
                if not errors:
                    return payload, None
        from fastapi.encoders import jsonable_encoder
        from fastapi.exceptions import RequestValidationError
        from starlette.responses import JSONResponse

        # Errors of decoded arrays (in-process calls only) quote them as lists.
        numpy_as_lists: dict[Any, Any] = {np.ndarray: np.ndarray.tolist, np.generic: np.generic.item}
        detail = jsonable_encoder(RequestValidationError(errors).errors(), custom_encoder=numpy_as_lists)
        return None, (detail, bytes(JSONResponse({"detail": detail}, status_code=422).body).decode(), 422)

    def run(self, endpoint: str, payload: Any, run_dir: str, keep: bool, kept: Any) -> tuple[Any, Any, int, int]:
        """Runs the endpoint: its outputs dumped as serve.py dumps them, arrays
        left as arrays, then what an apply asked to `keep` kept and its host
        and device bytes (tesscpp.reuse; None, 0, 0 when nothing was). `kept`
        is what the apply at a derivative call's inputs kept, or None."""
        e = self._endpoints[endpoint]
        with self._run_tracking(run_dir), reuse._scope(keep, kept) as slot:
            try:
                result = e.function(payload)
            finally:
                _flush()  # into the run's log, which captures fd 1 and 2
        adapter = self._adapters.get(type(result))
        if adapter is None:
            adapter = self._adapters.setdefault(type(result), TypeAdapter(type(result)))
        outputs = adapter.dump_python(result, mode="python", context={}, exclude_unset=e.exclude_unset)
        if slot is None or slot.state is None:
            return outputs, None, 0, 0
        return outputs, slot.state, slot.host_bytes, slot.device_bytes

    @contextlib.contextmanager
    def _run_tracking(self, run_dir: str) -> Iterator[None]:
        """tesseract-core's log_metric/log_parameter/log_artifact write into this run.

        As ``mpa.start_run`` but without its stdio redirection: the runtime already
        captures fd 1 and 2 into the run's log.
        """
        if not run_dir:
            yield
            return
        backend = _RunBackend(self._mpa, run_dir, eager=self._mlflow)
        token = self._mpa._current_backend.set(backend)
        try:
            yield
        finally:
            backend.end()
            self._mpa._current_backend.reset(token)

    @staticmethod
    def jsonable(value: Any) -> Any:
        """A dumped value the C++ side has no type for (dates, paths, enums), as JSON has it."""
        return to_jsonable_python(value)


class _RunBackend:
    """tesseract-core's backend for one run, made when the endpoint first logs.

    Its file backend would only redo what the runtime did for the run
    directory (``logs/``, ``logs/artifacts/``, ``metrics.csv`` with its
    header), which costs a third of a millisecond per call; MLflow's is made at
    once (``eager``), since tesseract-runtime starts an MLflow run for every call.
    """

    def __init__(self, mpa: Any, run_dir: str, eager: bool) -> None:
        self._mpa, self._run_dir = mpa, run_dir
        self._backend: Any = None
        if eager:
            self._made()

    def _made(self) -> Any:
        if self._backend is None:
            self._backend = self._mpa._create_backend(self._run_dir)
            self._backend.start_run()
        return self._backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

    def end(self) -> None:
        if self._backend is not None:
            self._backend.end_run()


class _Unparsed(typing.NamedTuple):
    """A body json.loads refused: FastAPI's errors for a JSONDecodeError, none for any other failure."""

    errors: list[dict[str, Any]]


def _parse_body(body: bytes) -> Any:
    """The body as FastAPI reads a JSON request (``fastapi.routing``, Starlette's ``Request.json``)."""
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        return _Unparsed([{"type": "json_invalid", "loc": ("body", e.pos), "msg": "JSON decode error",
                           "input": {}, "ctx": {"error": e.msg}}])  # fmt: skip
    except Exception:  # noqa: BLE001 - FastAPI answers any other failure with its 400
        return _Unparsed([])


def _threads() -> set[str]:
    """This process's threads, by id (Linux)."""
    return set(os.listdir("/proc/self/task"))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main() -> None:
    from . import _tesscpp

    # How a worker process for a module that cannot be forked runs the same
    # command afresh; unknown where the interpreter's path is.
    host = [sys.executable, "-m", "tesscpp._python_host"] if os.path.isabs(sys.executable or "") else []
    sys.exit(_tesscpp._run_commands(["tesscpp", *sys.argv[1:]], host))


if __name__ == "__main__":
    main()
