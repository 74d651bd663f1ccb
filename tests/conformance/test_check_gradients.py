"""`tesscpp check-gradients` next to tesseract-runtime's check-gradients.

The same payloads and the same Tesseracts: a C++ component in-process, a URL
served by tesseract-runtime, and a tesseract_api.py with a deliberately wrong
VJP (tests/fixtures/python/wrong_vjp), which both tools must fail on the same
endpoint and path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PY_FIXTURES, _tool, answered

ROSENBROCK = '{"inputs": {"x": 1.5, "y": 2.0}}'
WRONG_VJP = PY_FIXTURES / "wrong_vjp" / "tesseract_api.py"


def tesscpp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # tesseract_api.py targets are served by the tesseract-runtime of this Python.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}", **(env or {}))
    return subprocess.run([str(_tool("TESSCPP_CLI")), "check-gradients", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)  # fmt: skip


def runtime(api: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    env["TESSERACT_API_PATH"] = str(api)
    return subprocess.run([sys.executable, "-c", "from tesseract_core.runtime.cli import main; main()",
                           "check-gradients", "--no-show-progress", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)  # fmt: skip


def example(name: str) -> str:
    return str(_tool("TESSCPP_EXAMPLES_DIR") / f"lib{name}.so")


def passed_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("✅")]


def test_right_derivatives_pass_as_tesseract_runtime_says(servers):
    ours = tesscpp(example("univariate"), ROSENBROCK)
    assert ours.returncode == 0, ours.stderr
    reference = runtime(PY_FIXTURES / "univariate" / "tesseract_api.py", ROSENBROCK)
    assert reference.returncode == 0, reference.stderr
    assert passed_lines(ours.stdout) == passed_lines(reference.stderr) == [
        f"✅ Gradient check for {e} passed ✅ (0 failures / 2 checks)"
        for e in ("jacobian", "jacobian_vector_product", "vector_jacobian_product")
    ]
    # The same check over HTTP, against tesseract-runtime serving the twin.
    served = tesscpp(servers.get("univariate", backend="python").url, ROSENBROCK, "--seed", "1")
    assert served.returncode == 0, served.stderr
    assert passed_lines(served.stdout) == passed_lines(ours.stdout)


def test_a_non_symmetric_jacobian_passes_in_both():
    # y = A x, A 2x3: any transposition in a checker shows here.
    api = PY_FIXTURES / "matvec" / "tesseract_api.py"
    payload = '{"inputs": {"x": [0.5, -1.0, 2.0]}}'
    ours = tesscpp(str(api), payload, "--max-evals", "30")
    reference = runtime(api, payload, "--max-evals", "30")
    assert ours.returncode == reference.returncode == 0, (ours.stdout, ours.stderr, reference.stderr)
    assert passed_lines(ours.stdout) == passed_lines(reference.stderr) == [
        f"✅ Gradient check for {e} passed ✅ (0 failures / 30 checks)"
        for e in ("jacobian", "jacobian_vector_product", "vector_jacobian_product")
    ]


def test_a_wrong_vjp_fails_on_the_same_endpoint_and_path():
    ours = tesscpp(str(WRONG_VJP), ROSENBROCK)
    reference = runtime(WRONG_VJP, ROSENBROCK)
    assert ours.returncode == reference.returncode == 1, (ours.stdout, ours.stderr, reference.stderr)
    assert passed_lines(ours.stdout) == passed_lines(reference.stderr) == [
        "✅ Gradient check for jacobian passed ✅ (0 failures / 2 checks)"
    ]
    assert "⚠️ Gradient check for vector_jacobian_product failed ⚠️ (1 failures / 2 checks)" in ours.stdout
    assert "Input path: 'y', Output path: 'result'" in reference.stderr
    rows = [line.split() for line in ours.stdout.splitlines() if line.startswith("  ")]
    assert rows[0][:2] == ["input", "path"] and rows[1][:4] == ["y", "result", "()", "0"], ours.stdout
    assert float(rows[1][5]) == -100.0 and abs(float(rows[1][4]) + 50) < 0.1, rows[1]
    assert ours.stdout.rstrip().endswith("❌ Some gradient checks failed ❌")


def test_mistakes_are_refused_with_status_2_naming_them():
    cases = [
        ((example("univariate"), ROSENBROCK, "--input-paths", "z"), "input path z is not among"),
        ((example("univariate"), '{"x": 1.5}'), 'expected {"inputs"'),
        ((example("univariate"), ROSENBROCK, "--endpoints", "apply"), "not a derivative endpoint"),
        ((example("univariate"), ROSENBROCK, "--eps-for", "x"), "expected PATH=VALUE"),
        ((example("univariate"), ROSENBROCK, "--eps-for", "x=big"), "'big' is not a number"),
        ((example("noop"), '{"inputs": {"x": [1.0]}}'), "no derivative endpoint"),
        ((example("univariate"), "@/nonexistent.json"), "cannot read payload file"),
    ]
    for args, message in cases:
        result = tesscpp(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.returncode, result.stderr)


def test_options_come_from_the_environment_as_tesseract_runtime_reads_them():
    env = {"TESSERACT_RUNTIME_CHECK_GRADIENTS_ENDPOINTS": "jacobian",
           "TESSERACT_RUNTIME_CHECK_GRADIENTS_INPUT_PATHS": "y",
           "TESSERACT_RUNTIME_CHECK_GRADIENTS_MAX_EVALS": "1"}  # fmt: skip
    ours = tesscpp(example("univariate"), ROSENBROCK, env=env)
    assert ours.returncode == 0, ours.stderr
    assert passed_lines(ours.stdout) == ["✅ Gradient check for jacobian passed ✅ (0 failures / 1 checks)"]
    # A wrong value from the environment is refused like the flag's.
    refused = tesscpp(example("univariate"), ROSENBROCK, env={"TESSERACT_RUNTIME_CHECK_GRADIENTS_INPUT_PATHS": "z"})
    assert refused.returncode == 2 and "input path z is not among" in refused.stderr, refused.stderr


def test_rtol_decides_what_passes():
    # The wrong VJP is off by a factor 2 (fd -50 against -100): |fd - grad| = 50 fails
    # rtol 0.1 (the default) and passes rtol 0.6, so the tolerance is the one given.
    assert tesscpp(str(WRONG_VJP), ROSENBROCK, "--endpoints", "vector_jacobian_product").returncode == 1
    loose = tesscpp(str(WRONG_VJP), ROSENBROCK, "--endpoints", "vector_jacobian_product", "--rtol", "0.6")
    assert loose.returncode == 0, loose.stdout
    assert passed_lines(loose.stdout) == [
        "✅ Gradient check for vector_jacobian_product passed ✅ (0 failures / 2 checks)"
    ]


def test_output_paths_and_max_output_samples_choose_what_the_vjp_sweeps(servers):
    """burgers_ad served by tesscpp: u (5 cells) to u_next (5) and energy (1).
    The checker asks one VJP per swept output element, counted by /metrics."""
    url = servers.fresh("burgers_ad", backend="tesscpp").url
    payload = '{"inputs": {"u": [0.1, 0.4, 0.9, 0.4, 0.1]}}'
    vjp = ("--endpoints", "vector_jacobian_product", "--input-paths", "u", "--max-evals", "5", "--seed", "3")
    counts = []
    for extra in [("--output-paths", "u_next"), ("--output-paths", "u_next", "--max-output-samples", "2"),
                  ("--output-paths", "energy"), ()]:  # fmt: skip
        before = answered(url).get("/vector_jacobian_product", 0)
        run = tesscpp(url, payload, *vjp, *extra)
        assert run.returncode == 0, (extra, run.stdout, run.stderr)
        counts.append(answered(url).get("/vector_jacobian_product", 0) - before)
    # Every u_next element; 2 of them; energy's one; then both outputs (5 + 1).
    assert counts == [5, 2, 1, 6], counts
    unknown = tesscpp(url, payload, *vjp, "--output-paths", "nope")
    assert unknown.returncode == 2 and "output path nope is not among" in unknown.stderr, unknown.stderr


def test_inputs_it_cannot_check_end_with_status_2():
    half = PY_FIXTURES / "half" / "tesseract_api.py"
    cases = [
        ((str(half), '{"inputs": {"x": [1.0, 2.0]}}'), "x: finite differences need a float32 or float64 array, "
                                                         "not float16"),
        ((example("univariate"), '{"inputs": {"x": "a", "y": 2.0}}'), "apply at the payload: 1 validation error"),
    ]  # fmt: skip
    for args, message in cases:
        result = tesscpp(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.returncode, result.stderr)
