"""`tesscpp build` images on a real Docker engine, used by tesseract-core 1.15
(the engine and the helpers are in conftest.py)."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pydantic
import pytest
import requests

from conftest import ROOT, TEST_CASES, containers_of, docker, required, run

sys.path.insert(0, str(ROOT / "tests" / "deploy"))
from haproxy import wait_for_health  # noqa: E402


def test_the_image_holds_the_cli_the_component_and_their_libraries_only(vectoradd, tmp_path):
    size = int(docker("image", "inspect", vectoradd, "--format", "{{.Size}}").stdout)
    # docs/containers.md and README: 27.4 MB (2026-12-03); a margin for other
    # libraries of the same Debian, no more: a debug build or an extra closure fails.
    assert 24e6 < size < 31e6, f"{size / 1e6:.1f} MB"
    container = docker("create", vectoradd).stdout.strip()
    try:
        docker("export", "-o", tmp_path / "fs.tar", container)
    finally:
        docker("rm", container)
    with tarfile.open(tmp_path / "fs.tar") as fs:
        files = {m.name for m in fs.getmembers() if m.isfile()}
    # Files docker adds to every container's filesystem.
    files -= {".dockerenv", "dev/console", "etc/hostname", "etc/hosts", "etc/resolv.conf"}
    extra = {f for f in files if not (f.startswith("usr/local/lib/lib") and ".so" in f)}
    assert extra == {"usr/local/bin/tesscpp", "tesseract/component/libvectoradd.so", "lib64/ld-linux-x86-64.so.2",
                     "etc/passwd", "etc/group"}, extra  # fmt: skip
    libraries = {Path(f).name for f in files - extra}
    assert {"libtesscpp.so.0.1", "libc.so.6", "libstdc++.so.6", "libcurl.so.4"} <= libraries, libraries
    config = json.loads(docker("image", "inspect", vectoradd, "--format", "{{json .Config}}").stdout)
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["TESSERACT_NAME"] == "vectoradd" and env["TESSERACT_VERSION"] == "1.2.3"
    assert env["TESSERACT_INPUT_PATH"] == "/tesseract/input_data"
    assert env["TESSERACT_OUTPUT_PATH"] == "/tesseract/output_data"
    assert config["ExposedPorts"] == {"8000/tcp": {}} and config["User"] == "1000:1000"
    assert json.loads(config["Labels"]["ai.pasteurlabs.tesseract.metadata"])["name"] == "vectoradd"


def test_tesseract_core_serves_it_unchanged(vectoradd):
    from tesseract_core import Tesseract

    a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([4.0, 5.0, 6.0], np.float32)
    with Tesseract.from_image(vectoradd) as t:
        np.testing.assert_array_equal(t.apply({"a": a, "b": b, "s": 2.0})["result"], [6.0, 9.0, 12.0])
        jac = t.jacobian({"a": a, "b": b, "s": 2.0}, ["a"], ["result"])["result"]["a"]
        np.testing.assert_array_equal(jac, 2 * np.eye(3))
        with pytest.raises(pydantic.ValidationError):
            t.apply({"a": a, "b": "not an array"})
        assert t.openapi_schema["info"] == {"title": "vectoradd", "version": "1.2.3",
                                            "description": "Simple tesseract that adds two vectors.\n"}  # fmt: skip
        # /test (from_image serves in debug mode, which enables it)
        spec = json.loads((TEST_CASES / "vectoradd" / "test_apply.json").read_text())
        answer = requests.post(f"{t._client.url}/test", json=spec, timeout=30)
        assert answer.status_code == 200 and answer.json()["status"] == "passed", answer.text
        assert containers_of(vectoradd)
    assert containers_of(vectoradd) == [], "teardown left a container"


def test_one_shot_commands_run_as_the_entrypoint(vectoradd, tmp_path):
    (tmp_path / "in.json").write_text(json.dumps({"inputs": {"a": [1, 2], "b": [3, 4]}}))
    # The image's user (1000) reads the mount: pytest's folders are private to root.
    tmp_path.chmod(0o755)
    (tmp_path / "in.json").chmod(0o644)
    mount = f"{tmp_path}:/mnt:ro"
    out = docker("run", "--rm", "-v", mount, vectoradd, "apply", "@/mnt/in.json").stdout
    assert json.loads(out)["result"]["data"]["buffer"] == [4.0, 6.0]
    openapi = json.loads(docker("run", "--rm", vectoradd, "openapi").stdout)
    assert openapi["info"]["title"] == "vectoradd"
    gradients = docker("run", "--rm", "-v", mount, vectoradd, "check-gradients", "@/mnt/in.json", "--seed", "1")
    assert gradients.stdout.startswith("✅ Gradient check for jacobian passed ✅"), gradients.stdout
    assert containers_of(vectoradd) == []


def test_it_runs_unprivileged_and_stops_cleanly_on_sigterm(vectoradd):
    container = docker("run", "-d", "-p", "127.0.0.1::8000", vectoradd, "serve", "--port", "8000",
                       "--host", "0.0.0.0").stdout.strip()  # fmt: skip
    try:
        port = docker("port", container, "8000/tcp").stdout.split(":")[-1].strip()
        if not wait_for_health(f"http://127.0.0.1:{port}", 30):
            pytest.fail(docker("logs", container).stdout)
        assert docker("exec", container, "/usr/local/bin/tesscpp", "health").stdout.strip() == '{"status":"ok"}'
        state = json.loads(docker("inspect", container, "--format", "{{json .Config}}").stdout)
        assert state["User"] == "1000:1000"
        # PID 1 handles SIGTERM itself: exit status 0, not the 137 of the
        # SIGKILL that follows the 30 s grace.
        docker("stop", "-t", "30", container)
        assert docker("inspect", container, "--format", "{{.State.ExitCode}}").stdout.strip() == "0"
    finally:
        docker("rm", "-f", container, check=False)


def test_bad_builds_are_clear_errors(tmp_path):
    cli = required("TESSCPP_CLI")
    missing = run(cli, "build", tmp_path / "libnothing.so", check=False)
    assert missing.returncode != 0 and "libnothing.so" in missing.stderr
    bad_tag = run(cli, "build", Path(required("TESSCPP_EXAMPLES_DIR")) / "libnoop.so", "--tag", "Bad Tag!",
                  check=False)  # fmt: skip
    assert bad_tag.returncode != 0 and "importing the image" in bad_tag.stderr, bad_tag.stderr

