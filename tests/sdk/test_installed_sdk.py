"""The installed C++ SDK, used the way a scientist's own project uses it.

`cmake --install` of this build into a temporary prefix, then a component
project written here (not an examples/ target, nothing from the source tree on
its paths: tests/sdk/scaler, copied away) is built three ways: with find_package(tesscpp) and
tesscpp_add_component, with pkg-config, and against a copy of the prefix moved
elsewhere. The components are served by the installed CLI and called with
tesseract-core 1.15's SDK; one built for another C++ standard is refused by the
loader, naming both build signatures.

Needs TESSCPP_BUILD_DIR (the CMake build to install); run by CTest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tesseract_core import Tesseract

SOURCE_TREE = Path(__file__).resolve().parents[2]

SCALER = Path(__file__).resolve().parent / "scaler"


def run(*args: str | Path, env: dict | None = None, check: bool = True, cwd: Path | None = None):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def clean_env() -> dict:
    """No variable that could point a build or a loader back at the source tree."""
    drop = ("TESSCPP_", "CMAKE_", "PKG_CONFIG", "LD_LIBRARY_PATH", "CPATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    build = os.environ.get("TESSCPP_BUILD_DIR")
    if not build:
        pytest.fail("TESSCPP_BUILD_DIR is not set: run this suite through CTest (make test)", pytrace=False)
    prefix = tmp_path_factory.mktemp("sdk") / "prefix"
    run("cmake", "--install", build, "--prefix", prefix)
    return prefix


def project(root: Path) -> Path:
    """A copy of the scaler project at `root`."""
    shutil.copytree(SCALER, root)
    return root


def cmake_build(source: Path, prefix: Path, *options: str, check: bool = True):
    configured = run("cmake", "-S", source, "-B", source / "build", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
                     "-DCMAKE_BUILD_TYPE=Release", *options, env=clean_env(), check=check)  # fmt: skip
    if configured.returncode != 0:
        return configured
    return run("cmake", "--build", source / "build", env=clean_env(), check=check)


def serve(cli: Path, library: Path):
    """The installed CLI serving `library`: (process, url)."""
    process = subprocess.Popen([str(cli), "serve", str(library), "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=clean_env())  # fmt: skip
    line = process.stdout.readline()
    match = re.search(r"http://\S+", line)
    if not match:
        process.kill()
        raise AssertionError(f"no serving line: {line!r} {process.stderr.read()}")
    return process, match.group(0)


def check_scaler(cli: Path, library: Path) -> None:
    process, url = serve(cli, library)
    try:
        t = Tesseract.from_url(url)
        out = t.apply({"x": np.array([1.0, 2.0, 3.0]), "k": 3.0})
        np.testing.assert_array_equal(out["y"], [3.0, 6.0, 9.0])
        vjp = t.vector_jacobian_product({"x": np.array([1.0, 2.0]), "k": 3.0}, ["x"], ["y"],
                                        {"y": np.array([1.0, -1.0])})  # fmt: skip
        np.testing.assert_array_equal(vjp["x"], [3.0, -3.0])
        assert t.openapi_schema["info"]["title"] == "scaler"
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


def test_the_installed_tree(prefix):
    assert (prefix / "include" / "tesscpp" / "component.h").is_file()
    assert (prefix / "bin" / "tesscpp").is_file()
    libdir = next(prefix.glob("lib*/libtesscpp.so")).parent
    soname = run("readelf", "-d", libdir / "libtesscpp.so").stdout
    assert "Library soname: [libtesscpp.so.0.1]" in soname, soname
    assert (libdir / "cmake" / "tesscpp" / "tesscppConfig.cmake").is_file()
    assert (libdir / "pkgconfig" / "tesscpp.pc").is_file()
    # Nothing of the tree's private headers (src/) is installed.
    assert sorted(p.name for p in (prefix / "include").iterdir()) == ["tesscpp"]


def test_a_project_outside_the_tree_builds_serves_and_answers_the_sdk(prefix, tmp_path):
    source = project(tmp_path / "scaler")
    cmake_build(source, prefix)
    library = source / "build" / "libscaler.so"
    # The build saw the installed prefix, never the source tree.
    ninja = (source / "build" / "build.ninja").read_text()
    assert str(SOURCE_TREE) not in ninja and f"{prefix}/include" in ninja
    check_scaler(prefix / "bin" / "tesscpp", library)
    # Only the entry point is exported.
    exported = run("nm", "-D", "--defined-only", library).stdout
    assert [line.split()[-1] for line in exported.splitlines() if " T " in line] == ["tesscpp_component_entry_v1"]


def test_pkg_config_builds_a_component(prefix, tmp_path):
    env = clean_env()
    env["PKG_CONFIG_PATH"] = str(next(prefix.glob("lib*/pkgconfig")))
    flags = run("pkg-config", "--cflags", "--libs", "tesscpp", env=env).stdout.split()
    library = tmp_path / "libscaler.so"
    run("g++", "-shared", "-fPIC", "-fvisibility=hidden", "-O1", SCALER / "scaler.cc", "-o", library, *flags, env=env)
    check_scaler(prefix / "bin" / "tesscpp", library)
    # Its -rpath finds libtesscpp outside the CLI too: dlopen in a process with no library path set.
    loaded = run(sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('loaded')", library,
                 env=clean_env(), check=False)  # fmt: skip
    assert loaded.returncode == 0 and loaded.stdout.strip() == "loaded", loaded.stderr


def test_the_prefix_is_relocatable(tmp_path):
    # An install of its own, moved away: the first place no longer exists, so
    # any absolute path into it (targets file, RPATH, include dirs) would fail.
    first = tmp_path / "first"
    run("cmake", "--install", os.environ["TESSCPP_BUILD_DIR"], "--prefix", first)
    moved = tmp_path / "moved"
    first.rename(moved)
    source = project(tmp_path / "scaler")
    cmake_build(source, moved)
    assert f"tesscpp_DIR:PATH={moved}" in (source / "build" / "CMakeCache.txt").read_text()
    ninja = (source / "build" / "build.ninja").read_text()
    assert f"{moved}/include" in ninja and str(first) not in ninja
    resolved = run("ldd", moved / "bin" / "tesscpp").stdout
    assert f"{moved}/bin/../lib/libtesscpp.so.0.1" in resolved, resolved
    check_scaler(moved / "bin" / "tesscpp", source / "build" / "libscaler.so")


def test_another_release_is_not_found(prefix, tmp_path):
    source = project(tmp_path / "scaler")
    result = cmake_build(source, prefix, "-DSCALER_TESSCPP_VERSION=0.2", check=False)
    assert result.returncode != 0
    assert "tesscpp" in result.stderr and "0.2" in result.stderr, result.stderr


def test_a_component_built_for_another_abi_is_refused_naming_both(prefix, tmp_path):
    source = project(tmp_path / "scaler")
    cmake_build(source, prefix, "-DCMAKE_CXX_STANDARD=23")
    result = run(prefix / "bin" / "tesscpp", "apply", source / "build" / "libscaler.so",
                 '{"inputs": {"x": [1.0]}}', env=clean_env(), check=False)  # fmt: skip
    assert result.returncode != 0
    assert "cxx-202002" in result.stderr and "cxx-202100" in result.stderr, result.stderr


def test_check_gradients_passes_the_component_and_catches_a_wrong_vjp(prefix, tmp_path):
    payload = '{"inputs": {"x": [1.0, -2.0, 0.5], "k": 3.0}}'
    right = project(tmp_path / "right")
    cmake_build(right, prefix)
    cli = prefix / "bin" / "tesscpp"
    result = run(cli, "check-gradients", right / "build" / "libscaler.so", payload, env=clean_env(), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "✅ Gradient check for vector_jacobian_product passed ✅ (0 failures / 1000 checks)\n"
    # The derivative edited to be wrong, as an author's slip would make it.
    wrong = project(tmp_path / "wrong")
    source = (wrong / "scaler.cc").read_text()
    assert source.count("out[i] = in[k] * ct[i];") == 1
    (wrong / "scaler.cc").write_text(source.replace("out[i] = in[k] * ct[i];", "out[i] = (in[k] + 1) * ct[i];"))
    cmake_build(wrong, prefix)
    result = run(cli, "check-gradients", wrong / "build" / "libscaler.so", payload, env=clean_env(), check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "⚠️ Gradient check for vector_jacobian_product failed ⚠️" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("  ")]
    assert rows[1][:2] == ["x", "y"], result.stdout


@pytest.mark.parametrize("template", [None, "array", "explicit"], ids=["derived (default)", "array", "explicit"])
def test_init_writes_a_project_that_builds_and_passes_its_test_spec(prefix, tmp_path, template):
    cli = prefix / "bin" / "tesscpp"
    target = tmp_path / "my-model"
    chosen = ["--template", template] if template else []
    made = run(cli, "init", "my-model", "--dir", target, *chosen, env=clean_env())
    assert "wrote the component project my-model" in made.stdout
    assert sorted(p.name for p in target.iterdir()) == [
        ".gitignore", "CMakeLists.txt", "README.md", "my-model.cc", "test_apply.json"]  # fmt: skip
    source = (target / "my-model.cc").read_text()
    # The default derives the derivatives from apply; explicit writes a VJP by hand.
    assert ("autodiff::Derive(" in source) == (template is None), source
    assert ("autodiff::DeriveArrays(" in source) == (template == "array"), source
    assert ("c.VectorJacobianProduct(" in source) == (template == "explicit"), source
    refused = run(cli, "init", "my-model", "--dir", target, *chosen, env=clean_env(), check=False)
    assert refused.returncode == 1 and "exists" in refused.stderr and "--force" in refused.stderr
    (target / "my-model.cc").write_text("edited")
    run(cli, "init", "my-model", "--dir", target, "--force", *chosen, env=clean_env())
    assert "TESSCPP_COMPONENT(MakeMy_model)" in (target / "my-model.cc").read_text()
    bad = run(cli, "init", "1st", "--dir", tmp_path / "x", env=clean_env(), check=False)
    assert bad.returncode == 1 and "name '1st'" in bad.stderr and not (tmp_path / "x").exists()
    unknown = run(cli, "init", "m", "--dir", tmp_path / "y", "--template", "magic", env=clean_env(), check=False)
    assert unknown.returncode == 1 and "'derived', 'array' or 'explicit'" in unknown.stderr, unknown.stderr
    # Dr.Jit comes from its wheel, found through a Python that has it (here the suite's own).
    cmake_build(target, prefix, *([f"-DTESSCPP_DRJIT_PYTHON={sys.executable}"] if template == "array" else []))
    outcome = run(cli, "test", target / "build" / "libmy-model.so", f"@{target / 'test_apply.json'}", env=clean_env())
    assert json.loads(outcome.stdout) == {"status": "passed", "message": "", "endpoint": "apply"}
    check = run(cli, "check-gradients", target / "build" / "libmy-model.so", '{"inputs": {"x": [0.5, -1.0]}}',
                env=clean_env(), check=False)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 failures" in check.stdout, check.stdout


def test_the_cmake_package_names_its_cli_and_links_with_no_undefined(prefix, tmp_path):
    source = project(tmp_path / "scaler")
    with (source / "CMakeLists.txt").open("a") as f:
        f.write('message(STATUS "the CLI: ${tesscpp_EXECUTABLE}")\n')
    cmake_build(source, prefix)
    configured = run("cmake", "-S", source, "-B", source / "build", env=clean_env()).stdout
    cli = re.search(r"the CLI: (\S+)", configured)
    assert cli and Path(cli[1]).resolve() == (prefix / "bin" / "tesscpp").resolve(), configured
    assert run(cli[1], "--help", env=clean_env()).returncode == 0
    # A symbol that no library defines fails the component's link, not its load.
    with (source / "scaler.cc").open("a") as f:
        f.write('\nint nowhere_defined(int);\nextern "C" int scaler_uses_it(int x) { return nowhere_defined(x); }\n')
    broken = cmake_build(source, prefix, check=False)
    assert broken.returncode != 0 and "nowhere_defined" in broken.stdout + broken.stderr, broken.stdout


def test_the_array_template_says_what_to_install_without_drjit(prefix, tmp_path):
    target = tmp_path / "needs-drjit"
    run(prefix / "bin" / "tesscpp", "init", "needs-drjit", "--dir", target, "--template", "array", env=clean_env())
    # Debian's own Python has no drjit.
    result = cmake_build(target, prefix, "-DTESSCPP_DRJIT_PYTHON=/usr/bin/python3", check=False)
    assert result.returncode != 0
    said = " ".join((result.stdout + result.stderr).split())
    assert "needs-drjit derives its derivatives from array code with tesscpp::autodiff_arrays" in said, said
    assert "pip install drjit==1.5.0" in said and "apt install libllvm15" in said, said


def test_the_derived_template_says_what_to_install_without_adolc(prefix, tmp_path):
    target = tmp_path / "needs-ad"
    run(prefix / "bin" / "tesscpp", "init", "needs-ad", "--dir", target, env=clean_env())
    # Headers and libraries are looked for under a root with nothing in it: ADOL-C and Sacado are missing.
    result = cmake_build(target, prefix, "-DCMAKE_FIND_ROOT_PATH=/nonexistent",
                         "-DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY", "-DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY",
                         check=False)  # fmt: skip
    assert result.returncode != 0
    said = " ".join((result.stdout + result.stderr).split())
    assert "needs-ad derives its derivatives with tesscpp::autodiff, which needs ADOL-C and Sacado" in said, said
    assert "apt install libadolc-dev libtrilinos-sacado-dev" in said and "--template explicit" in said, said
