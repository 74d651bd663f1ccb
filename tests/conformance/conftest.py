"""Shared fixtures for the conformance suites (tesscpp against tesseract-core 1.15.0)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def _tool(env: str) -> Path:
    path = os.environ.get(env)
    if not path:
        pytest.fail(f"{env} is not set: run these tests through ctest (make test)")
    return Path(path)


@pytest.fixture(scope="session")
def codec_tool() -> Path:
    """The tesscpp-codec binary built by CMake."""
    return _tool("TESSCPP_CODEC_TOOL")


def run_tool(tool: Path, *args: str) -> bytes:
    result = subprocess.run([str(tool), *args], capture_output=True, timeout=120, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{tool.name} {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout
