"""A second component kind served by tesscpp's unchanged runtime over HTTP,
called by tesseract-core 1.15's own SDK.

The kind (tests/support/callback_component.h) is vectoradd written as callbacks
that validate their own requests and bring tesseract-runtime's recorded OpenAPI
document of the Python twin — the shape a Python module served on tesscpp's
runtime takes. Nothing in the runtime knows about it: it implements the
ServedComponent interface, as C++ components do.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from tesseract_core import Tesseract

from conftest import GOLDEN_RUNTIME

DOCUMENT = GOLDEN_RUNTIME / "vectoradd.openapi.json"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    output = tmp_path_factory.mktemp("callback-out")
    # stderr (the server's failure lines) goes to a file: a pipe nobody reads could fill and stall it.
    log = output / "server.log"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(
            [os.environ["TESSCPP_CALLBACK_SERVER"], str(DOCUMENT), str(output)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        line = proc.stdout.readline()  # "port <n>" once listening; EOF if it died
        assert line.startswith("port "), f"the server did not start: {line!r}, {log.read_text()!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}", Path(output)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_sdk_reads_the_kinds_own_document(served):
    url, _ = served
    tess = Tesseract.from_url(url)
    assert tess.openapi_schema == json.loads(DOCUMENT.read_text())
    assert sorted(tess.available_endpoints) == ["apply", "health", "jacobian"]
    assert tess.health() == {"status": "ok"}


@pytest.mark.parametrize("output_format", ["json", "json+base64", "json+binref"])
def test_the_sdk_applies_it_in_every_encoding(served, output_format):
    url, output = served
    tess = Tesseract.from_url(url, server_output_path=output).with_encoding(output_format=output_format)
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    result = tess.apply({"a": a, "b": b, "s": 2.0})["result"]
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, 2.0 * a + b)


def test_the_sdk_gets_its_jacobian(served):
    url, _ = served
    a = np.array([1.0, -2.0], dtype=np.float32)
    jac = Tesseract.from_url(url).jacobian({"a": a, "b": a, "s": 3.0}, ["a", "s"], ["result"])["result"]
    np.testing.assert_array_equal(jac["a"], 3.0 * np.eye(2))
    np.testing.assert_array_equal(jac["s"], a)


def test_its_validation_reaches_the_sdk_as_pydantics_error(served):
    url, _ = served
    with pytest.raises(ValidationError) as info:
        Tesseract.from_url(url).apply({"a": np.zeros(3, np.float32), "b": np.zeros(2, np.float32)})
    (error,) = info.value.errors()
    assert (error["type"], error["loc"]) == ("value_error", ("body", "inputs"))
    assert "a and b must have the same shape" in error["msg"]


def test_its_failures_are_500s_that_name_the_exception(served):
    url, _ = served
    with pytest.raises(RuntimeError, match="std::invalid_argument: s must not be negative"):
        Tesseract.from_url(url).apply({"a": np.ones(2, np.float32), "b": np.ones(2, np.float32), "s": -1.0})
