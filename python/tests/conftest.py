"""Fixtures for the Python suite.

Every bridge case runs on four backends:

  cpp-inprocess  the C++ fixture loaded by tesscpp.Tesseract.from_library;
                 tesseract-torch gets tesseract_core's from_tesseract_api of the
                 Python twin
  cpp-served     the C++ fixture served by `tesscpp serve` (started through
                 tesscpp.Tesseract.from_source); tesseract-torch reaches the same
                 server with tesseract_core's Tesseract.from_url
  py-served      the Python twin served by tesseract-runtime (tesseract-core
                 1.15.0), started the same way and reached the same way
  py-tesscpp     the Python twin served by tesscpp's runtime (`tesscpp serve
                 tesseract_api.py`, docs/python-host.md), reached the same way

and each case runs three times: through tesscpp.torch.apply_tesseract on a
tesscpp.Tesseract, through tesseract_torch.apply_tesseract (0.2.0) on a
tesseract_core.Tesseract, and through tesscpp's bridge on that
tesseract_core.Tesseract. The case asserts the contract
on each run; their observable results (values, gradients, dtypes, types,
error types, requests) must then be equal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tesseract_core
import tesseract_torch
import torch

import tesscpp
import tesscpp.torch

FIXTURE_SOURCES = Path(__file__).parent / "fixtures"
BACKENDS = ("cpp-inprocess", "cpp-served", "py-served", "py-tesscpp")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device (ctest runs these as python_gpu)")


def required_dir(variable: str) -> Path:
    value = os.environ.get(variable)
    if not value:
        pytest.fail(f"{variable} is not set: run this suite through ctest (make test)", pytrace=False)
    return Path(value)


def in_process_or_served(how: str, *libraries: Path) -> Iterator[tuple[tesscpp.Tesseract, ...]]:
    """The component libraries, all loaded in process (`how` "in-process") or
    all served by `tesscpp serve` ("served"), for a module fixture
    parametrized over both to yield from."""
    if how == "in-process":
        yield tuple(tesscpp.Tesseract.from_library(library) for library in libraries)
        return
    with contextlib.ExitStack() as stack:
        yield tuple(stack.enter_context(tesscpp.Tesseract.from_source(library)) for library in libraries)


def vjps_at_once(
    tesseract: Any, points: list, vjp_inputs: list[str], vjp_outputs: list[str], cotangent: dict, threads: int = 8
) -> list:
    """VJPs of `tesseract` at every point, `threads` calls at once, in the points' order."""
    with ThreadPoolExecutor(threads) as pool:
        return list(
            pool.map(lambda p: tesseract.vector_jacobian_product(p, vjp_inputs, vjp_outputs, cotangent), points)
        )


def fixture_library(name: str) -> Path:
    path = required_dir("TESSCPP_BRIDGE_FIXTURES") / f"lib{name}.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the python_bridge fixtures first", pytrace=False)
    return path


def fixture_api(name: str) -> Path:
    return FIXTURE_SOURCES / name / "tesseract_api.py"


class Recorder:
    """Stands in for a Tesseract and records the gradient requests it passes on.

    Both bridges use only public methods, so a proxy sees every call.
    """

    def __init__(self, tesseract: Any) -> None:
        self._tesseract = tesseract
        self.calls: list[tuple] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tesseract, name)

    def apply(self, inputs: dict, run_id: str | None = None) -> dict:
        self.calls.append(("apply",))
        return self._tesseract.apply(inputs)

    def vector_jacobian_product(self, inputs, vjp_inputs, vjp_outputs, cotangent_vector, run_id=None):
        self.calls.append(("vjp", sorted(vjp_inputs), sorted(vjp_outputs)))
        return self._tesseract.vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent_vector)

    def jacobian_vector_product(self, inputs, jvp_inputs, jvp_outputs, tangent_vector, run_id=None):
        self.calls.append(("jvp", sorted(jvp_inputs), sorted(jvp_outputs)))
        return self._tesseract.jacobian_vector_product(inputs, jvp_inputs, jvp_outputs, tangent_vector)

    def gradient_calls(self) -> list[tuple]:
        return [c for c in self.calls if c[0] != "apply"]


class Backends:
    """Tesseract pairs (ours, tesseract-core's) per backend and fixture, made once."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._servers: list[tesscpp.Tesseract] = []

    def pair(self, backend: str, name: str) -> tuple[Any, Any]:
        key = (backend, name)
        if key not in self._pairs:
            self._pairs[key] = self._make(backend, name)
        return self._pairs[key]

    def _make(self, backend: str, name: str) -> tuple[Any, Any]:
        if backend == "cpp-inprocess":
            ours = tesscpp.Tesseract.from_library(fixture_library(name))
            theirs = tesseract_core.Tesseract.from_tesseract_api(fixture_api(name))
            return ours, theirs
        source = fixture_library(name) if backend == "cpp-served" else fixture_api(name)
        runtime = "tesseract-runtime" if backend == "py-served" else "tesscpp"
        server = tesscpp.Tesseract.from_source(source, python_executable=sys.executable, python_runtime=runtime)
        server.serve()
        self._servers.append(server)
        return server, tesseract_core.Tesseract.from_url(server.url)

    def close(self) -> None:
        for server in self._servers:
            server.teardown()


@pytest.fixture(scope="session")
def backends() -> Iterator[Backends]:
    pool = Backends()
    yield pool
    pool.close()


# -- comparing the two bridges -------------------------------------------------------


def assert_same_observables(ours: Any, theirs: Any, where: str = "result") -> None:
    """Equal structure, leaf types, dtypes and values (float tolerance 1e-5)."""
    if isinstance(ours, dict):
        assert isinstance(theirs, dict), f"{where}: dict vs {type(theirs).__name__}"
        assert sorted(ours) == sorted(theirs), f"{where}: keys {sorted(ours)} vs {sorted(theirs)}"
        for key in ours:
            assert_same_observables(ours[key], theirs[key], f"{where}.{key}")
        return
    if isinstance(ours, (list, tuple)):
        assert isinstance(theirs, (list, tuple)) and len(ours) == len(theirs), f"{where}: {ours!r} vs {theirs!r}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same_observables(a, b, f"{where}[{i}]")
        return
    if _is_numpy_scalar(ours) and _is_numpy_scalar(theirs):
        # In-process Python components hand back NumPy scalars where decoded
        # and C++ results are 0-d arrays: the same value to the bridge.
        ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} vs {type(theirs).__name__}"
    if isinstance(ours, torch.Tensor):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, f"{where}: {ours!r} vs {theirs!r}"
        assert ours.device == theirs.device, f"{where}: device {ours.device} vs {theirs.device}"
        assert torch.allclose(ours.detach(), theirs.detach(), rtol=1e-5, atol=1e-5, equal_nan=True), f"{where}"
    elif isinstance(ours, (np.ndarray, np.generic)):
        assert ours.dtype == theirs.dtype and np.shape(ours) == np.shape(theirs), f"{where}: {ours!r} vs {theirs!r}"
        assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-5, equal_nan=True), f"{where}"
    else:
        assert ours == theirs, f"{where}: {ours!r} vs {theirs!r}"


def _is_numpy_scalar(value: Any) -> bool:
    return isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _run_reference(body: Callable, tesseract: Any) -> tuple[str, Any]:
    try:
        return "returned", body(tesseract_torch.apply_tesseract, Recorder(tesseract))
    except Exception as error:  # noqa: BLE001 - any outcome is compared, not judged here
        return "raised", error


class Bridge:
    """Runs one case through both bridges on one backend and compares them."""

    def __init__(self, backends: Backends, backend: str) -> None:
        self.backends = backends
        self.backend = backend

    def tesseracts(self, name: str) -> tuple[Any, Any]:
        return self.backends.pair(self.backend, name)

    def compare(self, name: str, body: Callable[[Callable, Recorder], Any]) -> Any:
        """The case through tesscpp's bridge on tesscpp's Tesseract (asserting the
        contract), through tesseract-torch on tesseract_core's Tesseract, and
        through tesscpp's bridge on tesseract_core's Tesseract: all three alike."""
        ours_t, theirs_t = self.tesseracts(name)
        ours = body(tesscpp.torch.apply_tesseract, Recorder(ours_t))
        outcome, theirs = _run_reference(body, theirs_t)
        if outcome == "raised":
            raise AssertionError(
                f"tesseract-torch 0.2.0 differs on this case ({type(theirs).__name__}: {theirs})"
            ) from theirs
        assert_same_observables(ours, theirs)
        assert_same_observables(ours, body(tesscpp.torch.apply_tesseract, Recorder(theirs_t)), "on tesseract_core")
        return ours


@pytest.fixture(params=BACKENDS)
def bridge(request: pytest.FixtureRequest, backends: Backends) -> Bridge:
    return Bridge(backends, request.param)
