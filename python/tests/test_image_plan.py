"""tesscpp._image_plan, the Python half of `tesscpp build` for a Python
module's folder (docs/containers.md, "Images of Python modules"): the
configuration read by tesseract-core's model, the keys refused by name, the
trimmed runtime requirements. The images themselves are built and run in
tests/containers/test_python_images.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("tesseract_core")

from tesscpp import _image_plan  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "containers" / "fixtures" / "vectoradd_image"


def _folder(tmp_path: Path, config: str) -> Path:
    folder = tmp_path / "module"
    shutil.copytree(FIXTURE, folder)
    (folder / "tesseract_config.yaml").write_text(config)
    return folder


def test_the_fixtures_plan():
    plan = _image_plan.plan(FIXTURE)
    assert (plan["name"], plan["version"]) == ("vectoradd-image", "0.3.0")
    assert plan["env"] == {"VECTORADD_LABEL": "imaged"}
    assert plan["package_data"] == [[str(FIXTURE / "data" / "offset.json"), "/tesseract/data/offset.json"]]
    assert plan["pip_arguments"][-2:] == ["-r", str(FIXTURE / "tesseract_requirements.txt")]
    assert plan["python"]["stdlib_skip"][0] == "test" and plan["extra_files"] == []


def test_the_runtime_requirements_leave_out_optional_features():
    requirements = _image_plan.runtime_requirements()
    names = {r.split("<")[0].split(">")[0].split("=")[0] for r in requirements}
    assert requirements[0].startswith("tesseract-core==")
    assert {"numpy", "pydantic", "fastapi", "uvicorn", "fsspec"} <= names
    assert not names & {"mlflow-skinny", "debugpy", "s3fs"}


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("base_image: nvidia/cuda:12.4.0-runtime-ubuntu22.04", "build_config.base_image"),
        ("target_platform: linux/arm64", "build_config.target_platform"),
        ("custom_build_steps: ['RUN true']", "build_config.custom_build_steps"),
        ("inherit_base_image_packages: true", "build_config.inherit_base_image_packages"),
        ("requirements: {provider: conda}", "build_config.requirements.provider"),
        ("requirements: {provider: uv-pip, python_version: '2.7'}", "build_config.requirements.python_version"),
        ("requirements: {provider: uv-pip, requirements_file: pylock.toml}", "requirements_file"),
        ("extra_packages: [tesscpp-not-a-debian-package]", "'tesscpp-not-a-debian-package' is not installed"),
        ("package_data: [[missing.txt, data/missing.txt]]", "'missing.txt' does not exist"),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(tmp_path, config, named):
    folder = _folder(tmp_path, f"name: refused\nbuild_config:\n  {config}\n")
    with pytest.raises(_image_plan.RefusedError, match=named.replace(".", r"\.").replace("[", r"\[")):
        _image_plan.plan(folder)


def test_an_installed_debian_package_brings_its_files(tmp_path):
    folder = _folder(tmp_path, "name: extra\nbuild_config:\n  extra_packages: [libc6]\n")
    files = _image_plan.plan(folder)["extra_files"]
    assert any(f.endswith("/libc.so.6") for f in files) and not any("/usr/share/doc/" in f for f in files)


def test_main_prints_tesseract_cores_own_errors(tmp_path, capsys):
    folder = _folder(tmp_path, "name: typo\nbuild_confg: {}\n")
    assert _image_plan.main([str(folder)]) == 1
    assert "build_confg" in capsys.readouterr().err
