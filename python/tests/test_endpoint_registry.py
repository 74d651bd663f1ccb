"""Every component endpoint of the C++ endpoint table reaches every place that
docs/architecture.md §2a says follows from its row: a row added without them
fails here, not in a user's hands."""

from __future__ import annotations

import inspect
import os
import subprocess

import pytest

import tesscpp
from tesscpp import _tesscpp

ROWS = _tesscpp.endpoint_rows()


def _cli(*args: str) -> str:
    cli = os.environ.get("TESSCPP_CLI")
    if not cli:
        pytest.fail("TESSCPP_CLI is not set (CTest sets it)")
    done = subprocess.run([cli, *args], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_table_has_the_component_endpoints_of_tesseract_core():
    names = {row["name"] for row in ROWS}
    assert names >= {
        "apply",
        "abstract_eval",
        "jacobian",
        "jacobian_vector_product",
        "vector_jacobian_product",
    }


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row["name"])
def test_the_python_client_has_a_method_per_endpoint(row):
    method = getattr(tesscpp.Tesseract, row["name"], None)
    assert callable(method), f"tesscpp.Tesseract has no method {row['name']}"
    parameters = inspect.signature(method).parameters
    if row["short_name"]:  # a gradient: its path sets as tesseract-core's SDK names them
        assert f"{row['short_name']}_inputs" in parameters
        assert f"{row['short_name']}_outputs" in parameters
    for field in (row["tangent_field"], row["cotangent_field"]):
        if field:
            assert field in parameters


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row["name"])
def test_the_cli_has_a_one_shot_command_and_calls_every_endpoint(row):
    assert row["command"] in _cli("--help")
    _cli(row["command"], "--help")
    assert row["name"] in _cli("call", "--help")
