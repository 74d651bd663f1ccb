"""What goes into the image of a Python module: ``tesscpp build DIR`` runs
``python -m tesscpp._image_plan DIR`` in the Python that hosts modules and
reads the plan it prints as JSON (tools/python_image.cc assembles the image).

The configuration is read and the module checked by tesseract-core's own SDK
(``get_config``, ``validate_tesseract_api``), so keys, defaults and error texts
are tesseract-core's. Keys whose meaning needs what an offline build does not
have (a base image, a builder, another platform, conda, credentials) are
refused by name; ``extra_packages`` are taken from this machine's installed
Debian packages (docs/containers.md, "Images of Python modules").
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

# Top-level folders of the standard library a server never imports.
_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
# Paths in the standard library a server never imports (relative to it):
# its tests, IDLE, Tk (and _tkinter, which would bring Tcl/Tk and X11),
# ensurepip, 2to3, installed packages, the static library of config-*.
STDLIB_SKIP = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
               "dist-packages", f"config-{_VERSION}-x86_64-linux-gnu",
               f"lib-dynload/_tkinter{EXTENSION_SUFFIXES[0]}")  # fmt: skip
# tesseract-core's runtime extra, less what only optional features import (and
# import lazily): MLflow tracking, the debugger, s3:// paths. A module that
# uses them lists them in its tesseract_requirements.txt.
_OPTIONAL = ("mlflow-skinny", "debugpy", "s3fs")
# Installed as tesseract-core's own dependencies, never used by a server.
PRUNE = ("pip",)
# Files of a Debian package that a program never reads.
_PACKAGE_DOCS = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/lintian/")


class RefusedError(Exception):
    """A configuration tesscpp cannot build; the message names the key."""


def _refuse_unhonourable(config: Any) -> None:
    """Refuses, naming the key, what an image assembled from this machine without a builder cannot honour."""
    from tesseract_core.sdk.api_parse import CondaRequirements, TesseractBuildConfig

    build = config.build_config
    defaults = TesseractBuildConfig()
    reasons = {
        "base_image": build.base_image != defaults.base_image
        and "tesscpp build assembles the image from this machine's Python, without a base image",
        "target_platform": build.target_platform != "native" and "only this machine's platform can be built",
        "custom_build_steps": bool(build.custom_build_steps) and "there is no builder to run Dockerfile steps",
        "inherit_base_image_packages": build.inherit_base_image_packages and "there is no base image",
        "host_credentials": bool(build.host_credentials)
        and "tesscpp build takes no build secrets; configure pip for the index instead",
    }
    if isinstance(build.requirements, CondaRequirements):
        reasons["requirements.provider"] = "conda environments are not supported; use uv-pip"
    else:
        wanted = build.requirements.python_version
        if wanted is not None and wanted != _VERSION:
            reasons["requirements.python_version"] = f"the image's Python is this machine's ({_VERSION}), not {wanted}"
        if build.requirements.is_pylock:
            reasons["requirements.requirements_file"] = "pip cannot install a PEP 751 lockfile here"
    refused = {key: why for key, why in reasons.items() if why}
    if refused:
        lines = "\n".join(f"  build_config.{key}: {why}" for key, why in refused.items())
        raise RefusedError(f"tesseract_config.yaml asks for what tesscpp build cannot honour:\n{lines}")


def _package_files(packages: tuple[str, ...]) -> list[str]:
    """The files of installed Debian packages (documentation left out); refuses a package that is not installed."""
    files: list[str] = []
    for package in packages:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
        if status.returncode != 0 or not status.stdout.endswith("installed"):
            raise RefusedError(
                f"build_config.extra_packages: {package!r} is not installed on this machine, and tesscpp build "
                "takes extra packages from it (install it with apt-get first)"
            )
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
        files += [path for path in listed.splitlines() if Path(path).is_file() and not path.startswith(_PACKAGE_DOCS)]
    return files


def _package_data(src_dir: Path, pairs: Any) -> list[list[str]]:
    """(source on this machine, absolute destination in the image); relative
    destinations are under /tesseract, as tesseract-core's COPY puts them."""
    out = []
    for source, target in pairs or ():
        path = src_dir / source
        if not path.exists():
            raise RefusedError(f"build_config.package_data: {source!r} does not exist in {src_dir}")
        out.append([str(path.resolve()), target if target.startswith("/") else f"/tesseract/{target}"])
    return out


def runtime_requirements() -> list[str]:
    """tesseract-core at this machine's version, and its runtime extra's
    requirements (as pinned there) less _OPTIONAL and fsspec's extras."""
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    out = [f"tesseract-core=={version('tesseract-core')}"]
    for text in requires("tesseract-core") or []:
        requirement = Requirement(text)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": "runtime"}):
            continue
        if requirement.name not in _OPTIONAL:
            out.append(f"{requirement.name}{requirement.specifier}")
    return out


def plan(src_dir: Path) -> dict[str, Any]:
    """The plan for `src_dir` (see the module's docstring)."""
    from tesseract_core.sdk.api_parse import get_config, validate_tesseract_api

    config = get_config(src_dir)
    _refuse_unhonourable(config)
    build = config.build_config
    if not build.skip_checks:
        validate_tesseract_api(src_dir)
    requirements = src_dir / build.requirements.requirements_file
    pip_arguments = [*runtime_requirements(), *(["-r", str(requirements)] if requirements.is_file() else [])]
    metadata = {**config.metadata, "name": config.name, "version": config.version, "built_by": "tesscpp"}
    return {
        "name": config.name,
        "version": config.version,
        "description": config.description,
        "env": dict(config.env),
        "metadata_json": json.dumps(metadata),
        "api": str((src_dir / "tesseract_api.py").resolve()),
        "pip_arguments": pip_arguments,
        "build_env": dict(build.build_env),
        "package_data": _package_data(src_dir, build.package_data),
        "extra_files": _package_files(tuple(build.extra_packages)),
        "skip_checks": build.skip_checks,
        "prune": list(PRUNE),
        "python": {
            "executable": str(Path(sys.executable).resolve()),
            "stdlib": sysconfig.get_paths()["stdlib"],
            "stdlib_skip": list(STDLIB_SKIP),
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tesscpp._image_plan DIR", file=sys.stderr)
        return 2
    try:
        print(json.dumps(plan(Path(argv[0]).resolve())))
    except ImportError as error:
        print(f"the Python that builds images ({sys.executable}) lacks tesseract-core: {error}", file=sys.stderr)
        return 1
    except RefusedError as error:
        print(error, file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - tesseract-core's own errors, printed as it prints them
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
