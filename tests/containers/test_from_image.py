"""tesscpp's own from_image (Python and C++), `tesscpp run` and project
builds, against a real engine; tesseract-core's `tesseract serve` on our image.

Everything is checked with the engine itself (what it runs, with which
mounts, user, limits and networks) or by behaviour, never by our own report.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import requests
import torch

import tesscpp
import tesscpp.torch
from conftest import build, containers_of, docker, required, run

A = np.array([1.0, 2.0, 3.0])
B = np.array([4.0, 5.0, 6.0])


@pytest.fixture(scope="session")
def collections():
    tag = build("collections")
    yield tag
    docker("rmi", "-f", tag)


@pytest.fixture(scope="session")
def univariate():
    tag = build("univariate")
    yield tag
    docker("rmi", "-f", tag)


@pytest.fixture(scope="session")
def foreign(tmp_path_factory):
    """An image that is not a Tesseract: no TESSERACT_NAME in its environment."""
    root = tmp_path_factory.mktemp("foreign")
    (root / "file").write_text("not a tesseract\n")
    run("tar", "-C", root, "-cf", root / "fs.tar", "file")
    tag = f"tesscpp-test-foreign:{uuid.uuid4().hex[:8]}"  # unique: the engine may be shared
    docker("import", root / "fs.tar", tag)
    yield tag
    docker("rmi", "-f", tag)


def inspect(name: str) -> dict:
    return json.loads(docker("container", "inspect", name).stdout)[0]


def gone(name: str) -> bool:
    return docker("ps", "-aq", "--filter", f"name=^{name}$").stdout.strip() == ""


def test_cpp_from_image(vectoradd, collections, foreign):
    """src/client/container_test.cc: FromImage in C++ on the same engine."""
    env = dict(os.environ, TESSCPP_TEST_IMAGE=vectoradd, TESSCPP_TEST_COLLECTIONS_IMAGE=collections,
               TESSCPP_TEST_FOREIGN_IMAGE=foreign)  # fmt: skip
    result = subprocess.run([required("TESSCPP_CONTAINER_TESTS")], env=env, capture_output=True, text=True,
                            timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "[  PASSED  ] 5 tests." in result.stdout, result.stdout[-2000:]


@pytest.mark.parametrize("output_format", ["json", "json+base64", "json+binref"])
def test_apply_in_every_output_format(vectoradd, output_format, tmp_path):
    with tesscpp.Tesseract.from_image(vectoradd, output_format=output_format, output_path=tmp_path) as t:
        np.testing.assert_array_equal(t.apply({"a": A, "b": B, "s": 2.0}, run_id="py")["result"], [6, 9, 12])
        assert (tmp_path / "run_py" / "logs").is_dir(), "the run directory is on the host"
        lz4 = t.with_encoding(compression="lz4")
        np.testing.assert_array_equal(lz4.apply({"a": A, "b": B})["result"], [5, 7, 9])
        env = dict(e.split("=", 1) for e in inspect(t.container_info().name)["Config"]["Env"])
        assert env["TESSERACT_OUTPUT_FORMAT"] == output_format
        if output_format == "json+binref":
            assert env["TESSERACT_INPUT_PATH"] == "/tesseract/input_data"
            assert any(p.suffix == ".bin" for p in tmp_path.rglob("*")), "binref outputs go through the mount"


def test_stream_logs(collections):
    lines: list[str] = []
    with tesscpp.Tesseract.from_image(collections, stream_logs=lines.append) as t:
        t.apply({"arrays": [A, B], "weights": {"w1": np.array([0.5, 2.0, 1.0])}, "scale": 3.0})
    assert lines and lines[0].startswith("collections: summing 2 arrays"), lines


def test_the_container_is_run_as_asked(vectoradd, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    # The container's user (not ours) writes the output folder.
    (tmp_path / "out").mkdir(mode=0o777)
    (tmp_path / "out").chmod(0o777)
    (data / "x.txt").write_text("mounted\n")
    with tesscpp.Tesseract.from_image(
        vectoradd,
        num_workers=2,
        memory="256m",
        user="4321:4321",
        environment={"MY_SETTING": "on"},
        volumes=[f"{data}:/extra"],
        runtime_config={"profiling": True},
        docker_args=["--label", "from.test=yes"],
        output_path=tmp_path / "out",
    ) as t:
        t.apply({"a": A, "b": B}, run_id="owned")
        info = t.container_info()
        assert info.status == "running" and info.image == vectoradd and info.url == t.url
        attrs = inspect(info.name)
        assert attrs["Id"] == info.id and info.attrs["Id"] == info.id
        assert attrs["Args"] == ["serve", "--port", "8000", "--num-workers", "2", "--host", "0.0.0.0"]
        assert attrs["Config"]["User"] == "4321:4321"
        assert attrs["HostConfig"]["Memory"] == 256 * 2**20
        assert attrs["Config"]["Labels"]["from.test"] == "yes"
        env = dict(e.split("=", 1) for e in attrs["Config"]["Env"])
        assert env["MY_SETTING"] == "on" and env["TESSERACT_PROFILING"] == "1" and env["TESSERACT_DEBUG"] == "1"
        mounts = {m["Destination"]: m for m in attrs["Mounts"]}
        assert mounts["/extra"]["Source"] == str(data) and mounts["/extra"]["RW"] is False
        assert mounts["/tesseract/output_data"]["RW"] is True
        ports = attrs["HostConfig"]["PortBindings"]["8000/tcp"][0]
        assert ports == {"HostIp": "127.0.0.1", "HostPort": str(info.host_port)}
        # The container really runs as that user: the run directory is its.
        assert (tmp_path / "out" / "run_owned").stat().st_uid == 4321
        # The server process itself runs as that user.
        top = docker("top", info.name, "-o", "pid,uid,args").stdout.splitlines()
        assert top[1].split()[1] == "4321" and "--num-workers 2" in top[1], top
    assert gone(info.name)


def test_a_second_container_reaches_the_first_by_its_alias(vectoradd):
    network = f"tesscpp-test-net-{uuid.uuid4().hex[:8]}"  # from_image creates it
    try:
        with tesscpp.Tesseract.from_image(vectoradd, network=network, network_alias="adder") as t:
            # Our image has the CLI as its entrypoint: `call` from a second container.
            out = docker("run", "--rm", "--network", network, vectoradd, "call", "http://adder:8000", "health").stdout
            assert json.loads(out) == {"status": "ok"}
            assert network in inspect(t.container_info().name)["NetworkSettings"]["Networks"]
    finally:
        docker("network", "rm", network, check=False)


def free_range(n: int) -> tuple[int, int]:
    """n consecutive ports that are free now, above the kernel's ephemeral range (which a
    fixed range would share with every client connection on the machine)."""
    low, high = (int(p) for p in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    candidates = range(high + 1, 65536 - n) if high + 1 < 65536 - n else range(1024, low - n)
    for first in random.sample(candidates, min(200, len(candidates))):
        try:
            with contextlib.ExitStack() as stack:
                for port in range(first, first + n):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", port))
            return first, first + n - 1
        except OSError:
            continue
    pytest.fail(f"no {n} consecutive free ports")


def test_port_ranges_and_a_taken_port(vectoradd):
    first, last = free_range(11)
    with tesscpp.Tesseract.from_image(vectoradd, port=f"{first}-{last}") as t:
        assert first <= t.container_info().host_port <= last
        taken = str(t.container_info().host_port)
        with pytest.raises(ConnectionError, match=f"port {taken} on 127.0.0.1 is already in use"):
            tesscpp.Tesseract.from_image(vectoradd, port=taken).serve()
    assert containers_of(vectoradd) == []


def test_bad_cases_are_clear_errors(vectoradd, foreign, monkeypatch):
    with pytest.raises(RuntimeError, match="no image 'tesscpp-test-missing:1' in the engine"):
        tesscpp.Tesseract.from_image("tesscpp-test-missing:1").serve()
    with pytest.raises(ValueError, match="is not a Tesseract image"):
        tesscpp.Tesseract.from_image(foreign).serve()
    with pytest.raises(ConnectionError, match="(?s)stopped before it was healthy.*no/such/lib.so"):
        tesscpp.Tesseract.from_image(vectoradd, environment={"TESSCPP_COMPONENT": "/no/such/lib.so"}).serve()
    # Serving, but in a network namespace of its own: the published port leads nowhere, so the
    # wait ends at startup_timeout with the container's log (what it holds by then is the
    # container's timing, so only its heading is asserted; the exit case above checks content).
    with pytest.raises(TimeoutError, match="was not healthy within 1 s; its log:"):
        tesscpp.Tesseract.from_image(vectoradd, docker_args=["--network", "none"], startup_timeout=1).serve()
    with pytest.raises(RuntimeError, match="container_info` is only available for served"):
        tesscpp.Tesseract.from_image(vectoradd).container_info()
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(ConnectionError, match="asking the engine docker"):
        tesscpp.Tesseract.from_image(vectoradd).serve()
    monkeypatch.undo()
    assert containers_of(vectoradd) == [], "failed starts leave nothing behind"


OWNER = """
import os, signal, sys, tesscpp
t = tesscpp.Tesseract.from_image(sys.argv[1])
t.serve()
print(t.container_info().name, flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
# "exit": leave without teardown; the interpreter's exit must remove it.
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_the_container_goes_with_its_owner(vectoradd, how):
    owner = subprocess.run([sys.executable, "-c", OWNER, vectoradd, how], capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    name = owner.stdout.strip()
    assert name.startswith("tesseract-"), owner.stderr
    if how == "kill":
        assert owner.returncode == -signal.SIGKILL
        deadline = time.monotonic() + 30  # the watcher removes it
        while not gone(name) and time.monotonic() < deadline:
            time.sleep(0.1)
    else:
        assert owner.returncode == 0, owner.stderr
    assert gone(name)


def test_apply_tesseract_through_a_container(univariate):
    with tesscpp.Tesseract.from_image(univariate) as t:
        x = torch.tensor(1.5, requires_grad=True)
        y = torch.tensor(2.0, requires_grad=True)
        out = tesscpp.torch.apply_tesseract(t, {"x": x, "y": y})["result"]
        expected = (1 - 1.5) ** 2 + 100 * (2.0 - 1.5**2) ** 2
        assert out.item() == pytest.approx(expected, rel=1e-6)
        out.backward()
        assert x.grad.item() == pytest.approx(-2 * (1 - 1.5) - 400 * 1.5 * (2.0 - 1.5**2), rel=1e-5)
        assert y.grad.item() == pytest.approx(200 * (2.0 - 1.5**2), rel=1e-5)


def test_tesseract_cores_serve_command_serves_our_image(vectoradd):
    served = run(Path(sys.executable).parent / "tesseract", "serve", vectoradd)
    info = json.loads(served.stdout)
    name = info["container_name"]
    try:
        port = info["containers"][0]["port"]
        t = tesscpp.Tesseract.from_url(f"http://127.0.0.1:{port}")
        np.testing.assert_array_equal(t.apply({"a": A, "b": B})["result"], [5, 7, 9])
    finally:
        run(Path(sys.executable).parent / "tesseract", "teardown", name)
    assert gone(name)


def test_tesscpp_run_one_command_per_container(vectoradd, tmp_path):
    cli = required("TESSCPP_CLI")
    payload = tmp_path / "in.json"
    payload.write_text(json.dumps({"inputs": {"a": [1, 2], "b": [3, 4], "s": 2.0}}))
    out = run(cli, "run", vectoradd, "apply", f"@{payload}", "--output-format", "json+base64").stdout
    assert json.loads(out)["result"]["data"]["encoding"] == "base64"
    out = run(cli, "run", "--output-path", tmp_path / "out", vectoradd, "apply", f"@{payload}",
              "--output-file", "result.json").stdout  # fmt: skip
    assert json.loads((tmp_path / "out" / "result.json").read_text())["result"]["data"]["buffer"] == [5.0, 8.0]
    bad = run(cli, "run", vectoradd, "apply", '{"inputs": {"a": [1]}}', check=False)
    assert bad.returncode != 0 and "b" in bad.stderr + bad.stdout
    missing = run(cli, "run", "tesscpp-test-missing:1", "apply", "{}", check=False)
    assert missing.returncode != 0 and "no image 'tesscpp-test-missing:1'" in missing.stderr
    assert containers_of(vectoradd) == []


def test_build_a_project_folder_with_the_installed_sdk(tmp_path):
    """A user's project: installed SDK, `tesscpp init`, `tesscpp build <dir>`."""
    prefix = tmp_path / "sdk"
    run("cmake", "--install", required("TESSCPP_BUILD_DIR"), "--prefix", prefix)
    cli = prefix / "bin" / "tesscpp"
    run(cli, "init", "heat", "--dir", tmp_path / "heat")
    tag = f"tesscpp-test-heat:{uuid.uuid4().hex[:8]}"
    built = run(cli, "build", tmp_path / "heat", "--tag", tag, timeout=600)
    assert built.stdout.strip() == f"tesscpp: built image {tag}"
    try:
        with tesscpp.Tesseract.from_image(tag) as t:
            assert t.openapi_schema["info"]["title"] == "heat"
            assert t.health() == {"status": "ok"}
    finally:
        docker("rmi", "-f", tag)


def test_from_image_with_a_token(vectoradd):
    with tesscpp.Tesseract.from_image(vectoradd, token="secret-for-the-container") as t:
        np.testing.assert_array_equal(t.apply({"a": A, "b": B})["result"], [5, 7, 9])
        assert requests.post(f"{t.url}/apply", json={"inputs": {"a": [1.0], "b": [2.0]}},
                             timeout=10).status_code == 401  # fmt: skip
