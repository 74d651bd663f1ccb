"""`tesscpp <endpoint> LIB PAYLOAD` next to `tesseract-runtime <endpoint>
PAYLOAD`: the one-shot commands (docs/sdk.md §6) print what tesseract-runtime
prints for the same payload, on the C++ example and its Python twin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import PY_FIXTURES, _tool

SCALARS = {"x": 1.5, "y": 2.0}
CASES = [
    ("apply", {"inputs": SCALARS}),
    ("jacobian", {"inputs": SCALARS, "jac_inputs": ["x", "y"], "jac_outputs": ["result"]}),
    ("jacobian-vector-product",
     {"inputs": SCALARS, "jvp_inputs": ["x"], "jvp_outputs": ["result"], "tangent_vector": {"x": 1.0}}),
    ("vector-jacobian-product",
     {"inputs": SCALARS, "vjp_inputs": ["y"], "vjp_outputs": ["result"], "cotangent_vector": {"result": 2.0}}),
    ("abstract-eval",
     {"inputs": {"x": {"shape": [], "dtype": "float32"}, "y": {"shape": [], "dtype": "float32"}}}),
    ("health", None),
]  # fmt: skip


def one_shot(command: list[str], cwd, env: dict[str, str] | None = None) -> str:
    # In a folder of the test's: both write a run's logs/ into the working directory.
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False)
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout.strip()


@pytest.mark.tesscpp_only
@pytest.mark.parametrize(("endpoint", "payload"), CASES, ids=[c[0] for c in CASES])
def test_one_shot_commands_print_what_tesseract_runtime_prints(endpoint, payload, tmp_path):
    library = _tool("TESSCPP_EXAMPLES_DIR") / "libunivariate.so"
    args = [json.dumps(payload)] if payload is not None else []
    ours = one_shot([str(_tool("TESSCPP_CLI")), endpoint, str(library), *args], tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    env["TESSERACT_API_PATH"] = str(PY_FIXTURES / "univariate" / "tesseract_api.py")
    reference = one_shot([sys.executable, "-c", "from tesseract_core.runtime.cli import main; main()", endpoint,
                          *args], tmp_path, env)  # fmt: skip
    # Equal as JSON: tesseract-runtime orders a jacobian's inputs as a Python set does,
    # differently from one process to the next.
    assert json.loads(ours) == json.loads(reference)


def _check(command: list[str], cwd, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=cwd, check=False)


def _runtime_check(module, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    env["TESSERACT_API_PATH"] = str(module)
    return _check([sys.executable, "-c", "from tesseract_core.runtime.cli import main; main()", "check"], cwd, env)


# What is broken: the module's text, what tesscpp check names (tesseract-core's
# own check_tesseract_api words) and what tesseract-runtime check's output
# holds (it builds its commands from the module first, so a missing name stops
# it with a traceback before its check runs).
BROKEN_MODULES = {
    "no apply": ('from pydantic import BaseModel\nclass InputSchema(BaseModel):\n    x: float\n'
                 'class OutputSchema(BaseModel):\n    y: float\n', "apply is not defined", "'apply'"),
    "no OutputSchema": ('from pydantic import BaseModel\nclass InputSchema(BaseModel):\n    x: float\n'
                        'def apply(inputs):\n    return {"y": inputs.x}\n', "OutputSchema is not defined",
                        "'OutputSchema'"),
    "InputSchema not a model": ('from pydantic import BaseModel\nInputSchema = dict\n'
                                'class OutputSchema(BaseModel):\n    y: float\n'
                                'def apply(inputs):\n    return {"y": 1.0}\n', "InputSchema is not a subclass",
                                "InputSchema"),
    "a syntax error": ("def apply(:\n", "Could not load module", "SyntaxError"),
}  # fmt: skip


@pytest.mark.tesscpp_only
def test_check_passes_good_components_as_tesseract_runtime_does(tmp_path):
    for component in (
        _tool("TESSCPP_EXAMPLES_DIR") / "libunivariate.so",
        PY_FIXTURES / "univariate" / "tesseract_api.py",
    ):
        done = _check([str(_tool("TESSCPP_CLI")), "check", str(component)], tmp_path)
        assert done.returncode == 0 and done.stdout == "✅ Tesseract API check successful ✅\n", done.stderr
    reference = _runtime_check(PY_FIXTURES / "univariate" / "tesseract_api.py", tmp_path)
    # tesseract-runtime prints it on stderr (its stdout is kept for results).
    assert reference.returncode == 0 and "✅ Tesseract API check successful ✅" in reference.stderr


@pytest.mark.tesscpp_only
@pytest.mark.parametrize("broken", list(BROKEN_MODULES))
def test_check_names_what_is_broken_in_a_module(broken, tmp_path):
    text, ours_name, reference_name = BROKEN_MODULES[broken]
    module = tmp_path / "tesseract_api.py"
    module.write_text(text)
    ours = _check([str(_tool("TESSCPP_CLI")), "check", str(module)], tmp_path)
    reference = _runtime_check(module, tmp_path)
    assert reference.returncode != 0 and reference_name in reference.stderr, reference.stderr
    assert ours.returncode == 1 and ours_name in ours.stderr, ours.stderr
    assert "successful" not in ours.stdout


@pytest.mark.tesscpp_only
def test_check_names_what_is_broken_in_a_library(tmp_path):
    not_a_library = tmp_path / "libfake.so"
    not_a_library.write_text("not an ELF file")
    cases = {
        tmp_path / "libmissing.so": "cannot open shared object file",
        not_a_library: "cannot load component library",
        # A shared library that is no component: the C++ runtime library itself.
        _tool("TESSCPP_EXAMPLES_DIR").parent / "lib" / "libtesscpp.so": "is not a tesscpp component library",
    }  # fmt: skip
    for library, named in cases.items():
        done = _check([str(_tool("TESSCPP_CLI")), "check", str(library)], tmp_path)
        assert done.returncode == 1 and named in done.stderr, (library, done.stderr)
    nothing = _check([str(_tool("TESSCPP_CLI")), "check"], tmp_path, {"PATH": os.environ["PATH"]})
    assert nothing.returncode == 2 and "no component" in nothing.stderr
