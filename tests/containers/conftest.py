"""What the container suites share: a real Docker engine and images of the examples.

The engine is the one DOCKER_HOST names if it answers, else a private dockerd
that scripts/docker/engine.sh starts under the build tree (own data and exec
roots and socket, overlay2) and stops at the end. Nothing here skips: without
an engine the suites fail.

Needs TESSCPP_CLI, TESSCPP_EXAMPLES_DIR and TESSCPP_DOCKER_DIR; run by CTest.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_CASES = ROOT / "tests" / "fixtures" / "test_cases"


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through CTest (make test)", pytrace=False)
    return value


def run(*args: str | Path, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def docker(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess:
    return run("docker", *args, check=check)


@pytest.fixture(scope="session", autouse=True)
def engine():
    state = required("TESSCPP_DOCKER_DIR")
    started = run(ROOT / "scripts" / "docker" / "engine.sh", "start", state)
    os.environ["DOCKER_HOST"] = started.stdout.strip().removeprefix("DOCKER_HOST=")
    yield os.environ["DOCKER_HOST"]
    run(ROOT / "scripts" / "docker" / "engine.sh", "stop", state)


def build(example: str) -> str:
    tag = f"tesscpp-test-{example}:{uuid.uuid4().hex[:8]}"
    library = Path(required("TESSCPP_EXAMPLES_DIR")) / f"lib{example}.so"
    out = run(required("TESSCPP_CLI"), "build", library, "--tag", tag)
    assert out.stdout.strip() == f"tesscpp: built image {tag}"
    return tag


@pytest.fixture(scope="session")
def vectoradd():
    tag = build("vectoradd")
    yield tag
    docker("rmi", "-f", tag)


def containers_of(tag: str) -> list[str]:
    return docker("ps", "-aq", "--filter", f"ancestor={tag}").stdout.split()


