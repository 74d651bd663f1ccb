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
