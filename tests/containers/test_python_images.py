"""`tesscpp build` of a Python module's folder on a real Docker engine
(docs/containers.md, "Images of Python modules"): the image tesseract-core's
SDK and ours run unchanged, one-shot commands, a saved image served from a
clean engine, and the builds that must fail without leaving an image.

The module (tests/containers/fixtures/vectoradd_image) imports more-itertools,
which pip installs from the index this machine reaches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pydantic
import pytest
import requests

import tesscpp
from conftest import ROOT, containers_of, docker, required, run

FIXTURE = ROOT / "tests" / "containers" / "fixtures" / "vectoradd_image"
A, B = np.array([1.0, 2.0, 3.0], np.float32), np.array([4.0, 5.0, 6.0], np.float32)


def _array(values: list[float], dtype: str) -> dict:
    return {"object_type": "array", "shape": [len(values)], "dtype": dtype,
            "data": {"buffer": values, "encoding": "json"}}  # fmt: skip


def _tag() -> str:
    return f"tesscpp-test-pyimage:{uuid.uuid4().hex[:8]}"


def _images() -> set[str]:
    return set(docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split())


@pytest.fixture(scope="module")
def pyimage():
    tag = _tag()
    out = run(required("TESSCPP_CLI"), "build", FIXTURE, "--tag", tag, timeout=900)
    assert out.stdout.strip().endswith(f"tesscpp: built image {tag}"), out.stdout
    yield tag
    docker("rmi", "-f", tag)


def test_the_image_keeps_tesseract_cores_contract(pyimage):
    config = json.loads(docker("image", "inspect", pyimage, "--format", "{{json .Config}}").stdout)
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["TESSERACT_NAME"] == "vectoradd-image" and env["TESSERACT_VERSION"] == "0.3.0"
    assert env["TESSERACT_DESCRIPTION"].startswith("s * a + b + offset")
    assert env["TESSERACT_API_PATH"] == "/tesseract/tesseract_api.py"
    assert env["TESSERACT_INPUT_PATH"] == "/tesseract/input_data"
    assert env["TESSERACT_OUTPUT_PATH"] == "/tesseract/output_data"
    assert env["VECTORADD_LABEL"] == "imaged"  # the config's env
    assert config["ExposedPorts"] == {"8000/tcp": {}} and config["User"] == "1000:1000"
    metadata = json.loads(config["Labels"]["ai.pasteurlabs.tesseract.metadata"])
    assert metadata == {"owner": "tesscpp tests", "name": "vectoradd-image", "version": "0.3.0",
                        "built_by": "tesscpp"}  # fmt: skip
    size = int(docker("image", "inspect", pyimage, "--format", "{{.Size}}").stdout)
    print(f"python image: {size / 1e6:.1f} MB")
    # docs/containers.md: the interpreter, its trimmed standard library,
    # numpy, pydantic and tesseract-core's runtime; a bound, not a target.
    assert size < 400e6, f"{size / 1e6:.1f} MB"


def test_tesseract_core_serves_it_unchanged(pyimage):
    from tesseract_core import Tesseract

    with Tesseract.from_image(pyimage) as t:
        out = t.apply({"a": A, "b": B, "s": 2.0})
        np.testing.assert_array_equal(out["result"], [6.5, 9.5, 12.5])  # package data: offset 0.5
        assert out["label"] == "imaged:3"  # the config's env, the third-party package
        jac = t.jacobian({"a": A, "b": B, "s": 2.0}, ["a", "s"], ["result"])["result"]
        np.testing.assert_array_equal(jac["a"], 2 * np.eye(3))
        np.testing.assert_array_equal(jac["s"], A)
        with pytest.raises(pydantic.ValidationError):  # a 422
            t.apply({"a": A, "b": "not an array"})
        inputs = {"a": _array([1.0], "float32"), "b": _array([2.0], "float32")}
        spec = {"endpoint": "apply", "payload": {"inputs": inputs},
                "expected_outputs": {"result": _array([3.5], "float64"), "label": "imaged:1"}}  # fmt: skip
        answer = requests.post(f"{t._client.url}/test", json=spec, timeout=30)
        assert answer.status_code == 200 and answer.json()["status"] == "passed", answer.text
    assert containers_of(pyimage) == [], "teardown left a container"


def test_tesscpp_runs_it_with_volumes_user_and_env(pyimage, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "out").mkdir(mode=0o777)
    (tmp_path / "out").chmod(0o777)
    with tesscpp.Tesseract.from_image(
        pyimage,
        user="4321:4321",
        environment={"VECTORADD_LABEL": "overridden"},
        volumes=[f"{data}:/extra"],
        output_path=tmp_path / "out",
    ) as t:
        out = t.apply({"a": A, "b": B}, run_id="owned")
        np.testing.assert_array_equal(out["result"], [5.5, 7.5, 9.5])
        assert out["label"] == "overridden:3"
        assert (tmp_path / "out" / "run_owned").stat().st_uid == 4321
        top = docker("top", t.container_info().name, "-o", "pid,uid,args").stdout.splitlines()
        assert top[1].split()[1] == "4321" and "tesscpp._python_host" in top[1], top


def test_one_shot_commands(pyimage, tmp_path):
    payload = tmp_path / "in.json"
    payload.write_text(json.dumps({"inputs": {"a": [1, 2], "b": [3, 4]}}))
    out = run(required("TESSCPP_CLI"), "run", pyimage, "apply", f"@{payload}")
    answer = json.loads(out.stdout)
    assert answer["result"]["data"]["buffer"] == [4.5, 6.5] and answer["label"] == "imaged:2"
    openapi = json.loads(docker("run", "--rm", pyimage, "openapi").stdout)
    assert openapi["info"]["title"] == "vectoradd-image"
    # The image's user (1000) reads the mount: pytest's folders are private to root.
    tmp_path.chmod(0o755)
    payload.chmod(0o644)
    gradients = docker("run", "--rm", "-v", f"{tmp_path}:/mnt:ro", pyimage, "check-gradients", "@/mnt/in.json",
                       "--seed", "1")  # fmt: skip
    assert gradients.stdout.startswith("✅ Gradient check for jacobian passed ✅"), gradients.stdout


@pytest.fixture
def clean_engine(tmp_path):
    """A second private engine with no image in it, on a bridge of its own
    beside the suite's engine (scripts/docker/engine.sh --own-bridge)."""
    script, state = ROOT / "scripts" / "docker" / "engine.sh", tmp_path / "clean-engine"
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}  # else it reuses the suite's
    started = subprocess.run([script, "start", state, "--own-bridge"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        yield started.stdout.strip().removeprefix("DOCKER_HOST=")
    finally:
        subprocess.run([script, "stop", state], env=env, timeout=120, check=True)


def test_a_saved_image_is_served_on_a_clean_engine(pyimage, clean_engine, tmp_path, monkeypatch):
    """docker save here, docker load into an engine that holds nothing else:
    the archive alone carries everything the image runs on."""
    archive = tmp_path / "image.tar"
    docker("save", "-o", archive, pyimage)
    monkeypatch.setenv("DOCKER_HOST", clean_engine)
    assert _images() == set()
    docker("load", "-i", archive)
    assert _images() == {pyimage}
    with tesscpp.Tesseract.from_image(pyimage) as t:
        np.testing.assert_array_equal(t.apply({"a": A, "b": B})["result"], [5.5, 7.5, 9.5])
    from tesseract_core import Tesseract

    with Tesseract.from_image(pyimage) as t:
        np.testing.assert_array_equal(t.apply({"a": A, "b": B, "s": 2.0})["result"], [6.5, 9.5, 12.5])
    payload = tmp_path / "in.json"
    payload.write_text(json.dumps({"inputs": {"a": [1, 2], "b": [3, 4]}}))
    answer = json.loads(run(required("TESSCPP_CLI"), "run", pyimage, "apply", f"@{payload}").stdout)
    assert answer["result"]["data"]["buffer"] == [4.5, 6.5]


def _folder(tmp_path: Path, config: str, requirements: str = "more-itertools\n") -> Path:
    folder = tmp_path / "module"
    shutil.copytree(FIXTURE, folder)
    (folder / "tesseract_config.yaml").write_text(config)
    (folder / "tesseract_requirements.txt").write_text(requirements)
    return folder


def test_a_key_tesscpp_cannot_honour_fails_the_build_by_name(tmp_path):
    folder = _folder(tmp_path, "name: refused\nbuild_config:\n  custom_build_steps: ['RUN apt-get update']\n"
                               "  target_platform: linux/arm64\n")  # fmt: skip
    before = _images()
    out = run(required("TESSCPP_CLI"), "build", folder, "--tag", _tag(), check=False)
    assert out.returncode != 0
    assert "build_config.custom_build_steps: there is no builder" in out.stderr, out.stderr
    assert "build_config.target_platform" in out.stderr, out.stderr
    assert _images() == before


def test_tesseract_cores_own_config_errors_come_through(tmp_path):
    folder = _folder(tmp_path, "name: typo\nbuild_confg: {}\n")
    out = run(required("TESSCPP_CLI"), "build", folder, check=False)
    assert out.returncode != 0 and "build_confg" in out.stderr, out.stderr


def test_a_requirement_that_cannot_be_installed_is_named_and_leaves_no_image(tmp_path):
    folder = _folder(tmp_path, "name: unresolvable\nversion: 0.1.0\n", "tesscpp-no-such-package-4f2a\n")
    before = _images()
    out = run(required("TESSCPP_CLI"), "build", folder, "--tag", _tag(), check=False, timeout=600)
    assert out.returncode != 0
    assert "pip could not install" in out.stderr and "tesscpp-no-such-package-4f2a" in out.stderr, out.stderr
    assert _images() == before
