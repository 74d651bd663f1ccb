"""Derivatives by finite differences (tesscpp/finite_differences.h): examples/decay,
whose jacobian, JVP and VJP come from DeriveByFiniteDifferences, against its Python
twin, whose endpoints call tesseract-core's finite_difference_jacobian / _jvp / _vjp,
served by tesseract-runtime; for each algorithm (central, forward, stochastic with
the same seed), on the same requests. Then against the closed form of the decay,
and through `tesscpp check-gradients`."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import requests

from conftest import _tool, start_server

U0 = [1.0, 2.0, 0.5, 3.0, 1.5, 0.25, 2.5, 0.75, 1.25, 4.0, 0.1, 0.2]
RATES = [0.1, 0.2, 0.3, 0.05, 0.5, 0.7, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65]
INPUTS = {"u0": U0, "rates": RATES, "dt": 0.1, "steps": 5}
N = len(U0)


def requests_for(algorithm: str) -> dict[str, dict]:
    # SPSA draws one direction per input in the order tesseract-core iterates
    # a Python set: with one differentiated input the draws are the same.
    ins = ["rates"] if algorithm == "stochastic" else ["u0", "rates"]
    return {
        "jacobian": {"inputs": INPUTS, "jac_inputs": ins, "jac_outputs": ["u", "total"]},
        "jacobian_vector_product": {"inputs": INPUTS, "jvp_inputs": ["u0", "rates"], "jvp_outputs": ["u", "total"],
                                    "tangent_vector": {"u0": [1.0] * N, "rates": [0.5] * N}},
        "vector_jacobian_product": {"inputs": INPUTS, "vjp_inputs": ins, "vjp_outputs": ["u", "total"],
                                    "cotangent_vector": {"u": list(np.linspace(-1, 1, N)), "total": 2.0}},
    }  # fmt: skip


def arrays(tree):
    if isinstance(tree, dict) and "data" in tree and "shape" in tree:
        return np.asarray(tree["data"]["buffer"], dtype=np.float64).reshape(tree["shape"])
    return {k: arrays(v) for k, v in tree.items()}


def assert_same(mine, reference, where=""):
    if isinstance(reference, dict):
        assert sorted(mine) == sorted(reference), where
        for key in reference:
            assert_same(mine[key], reference[key], f"{where}.{key}")
    else:
        np.testing.assert_allclose(mine, reference, rtol=1e-12, atol=0, err_msg=where)


@pytest.fixture
def ours(backend: str) -> str:
    if backend != "tesscpp":
        pytest.skip("the C++ example's finite differences")
    return backend


@pytest.mark.parametrize("algorithm", ["central", "forward", "stochastic"])
def test_finite_differences_are_tesseract_cores(ours, algorithm, tmp_path):
    servers = [start_server(b, "decay", tmp_path / b, env_extra={"DECAY_FD_ALGORITHM": algorithm})
               for b in (ours, "python")]  # fmt: skip
    try:
        for endpoint, body in requests_for(algorithm).items():
            answers = []
            for server in servers:
                r = requests.post(f"{server.url}/{endpoint}", json=body, timeout=60)
                assert r.status_code == 200, (server.backend, endpoint, r.text)
                answers.append(arrays(r.json()))
            assert_same(answers[0], answers[1], endpoint)
    finally:
        for server in servers:
            server.stop()


def test_central_differences_match_the_closed_form(ours, tmp_path):
    server = start_server(ours, "decay", tmp_path / ours, env_extra={"DECAY_FD_ALGORITHM": "central"})
    try:
        r = requests.post(f"{server.url}/jacobian", json=requests_for("central")["jacobian"], timeout=60)
        assert r.status_code == 200, r.text
        jac = arrays(r.json())
        eps_answer = requests.post(
            f"{server.url}/jacobian",
            json={**requests_for("central")["jacobian"], "jac_inputs": ["u0"], "jac_outputs": ["nothing"]},
            timeout=60,
        )
    finally:
        server.stop()
    u0, rates, dt, steps = np.array(U0), np.array(RATES), INPUTS["dt"], INPUTS["steps"]
    factor = (1 - dt * rates) ** steps
    np.testing.assert_allclose(jac["u"]["u0"], np.diag(factor), rtol=1e-6, atol=1e-9)
    du_drates = -u0 * steps * dt * (1 - dt * rates) ** (steps - 1)
    np.testing.assert_allclose(jac["u"]["rates"], np.diag(du_drates), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jac["total"]["rates"], du_drates, rtol=1e-6)
    assert eps_answer.status_code == 422  # an output that is not differentiable is the request's mistake


def test_check_gradients_passes_on_finite_difference_endpoints(ours, tmp_path):
    payload = tmp_path / "apply.json"
    payload.write_text('{"inputs": {"u0": [1.0, 2.0, 0.5], "rates": [0.1, 0.2, 0.3]}}')
    done = subprocess.run(
        [str(_tool("TESSCPP_CLI")), "check-gradients", str(_tool("TESSCPP_EXAMPLES_DIR") / "libdecay.so"),
         f"@{payload}", "--seed", "1"],
        capture_output=True, text=True, timeout=300, env={"DECAY_FD_ALGORITHM": "central"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "jacobian" in done.stdout and "vector_jacobian_product" in done.stdout, done.stdout
