"""Derived derivative endpoints (tesscpp/autodiff.h): examples/rosenbrock_ad
writes the Rosenbrock function once, generically; examples/univariate has the
same function with hand-written derivatives. Every endpoint of the derived one
must give the hand-written answer (float32, so within a few ulps), in process
and served, and hold up under concurrent calls.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import in_process_or_served, required_dir, vjps_at_once
from tesscpp import Tesseract

POINTS = [
    {"x": 0.5, "y": -1.25, "a": 1.0, "b": 100.0},
    {"x": -1.5, "y": 2.0, "a": 0.5, "b": 3.0},
    {"x": 1.0, "y": 1.0, "a": 1.0, "b": 100.0},  # the minimum: zero gradient
    {"x": 3.0, "y": 0.0, "a": -2.0, "b": 0.25},
]
PAIRS = [(["x", "y"], ["result"]), (["x"], ["result"]), (["y"], ["result"])]


def example(name: str):
    path = required_dir("TESSCPP_EXAMPLES_DIR") / f"lib{name}.so"
    if not path.exists() and name == "rosenbrock_ad":
        pytest.fail(f"{path} was not built: CMake found no ADOL-C or Sacado (scripts/deps/apt.txt installs them)")
    return path


@pytest.fixture(scope="module", params=["in-process", "served"])
def pair(request):
    yield from in_process_or_served(request.param, example("rosenbrock_ad"), example("univariate"))


def close(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=4 * np.finfo(np.float32).eps, atol=1e-6)


def as_inputs(point: dict) -> dict:
    return {k: np.float32(v) for k, v in point.items()}


@pytest.mark.parametrize("point", POINTS)
def test_apply_and_derivatives_equal_the_hand_written_ones(pair, point):
    derived, hand = pair
    inputs = as_inputs(point)
    close(derived.apply(inputs)["result"], hand.apply(inputs)["result"])
    for wrt, of in PAIRS:
        jac_d = derived.jacobian(inputs, wrt, of)
        jac_h = hand.jacobian(inputs, wrt, of)
        assert jac_d.keys() == jac_h.keys() and jac_d["result"].keys() == jac_h["result"].keys() == set(wrt)
        for name in wrt:
            close(jac_d["result"][name], jac_h["result"][name])
        tangent = {name: np.float32(0.75 - i) for i, name in enumerate(wrt)}
        jvp_d = derived.jacobian_vector_product(inputs, wrt, of, tangent)
        close(jvp_d["result"], hand.jacobian_vector_product(inputs, wrt, of, tangent)["result"])
        cotangent = {"result": np.float32(-1.5)}
        vjp_d = derived.vector_jacobian_product(inputs, wrt, of, cotangent)
        vjp_h = hand.vector_jacobian_product(inputs, wrt, of, cotangent)
        assert vjp_d.keys() == vjp_h.keys() == set(wrt)  # only the requested inputs
        for name in wrt:
            close(vjp_d[name], vjp_h[name])


def test_derived_endpoints_are_served_and_documented(pair):
    derived, _ = pair
    paths = derived.openapi_schema["paths"]
    for endpoint in (
        "/apply",
        "/abstract_eval",
        "/jacobian",
        "/jacobian_vector_product",
        "/vector_jacobian_product",
    ):
        assert endpoint in paths


def test_vjp_from_eight_threads_at_once(pair):
    derived, hand = pair
    points = [as_inputs({"x": 0.1 * i - 1.0, "y": 0.05 * i, "a": 1.0, "b": 10.0 + i}) for i in range(64)]
    results = vjps_at_once(derived, points, ["x", "y"], ["result"], {"result": np.float32(1.0)})
    for point, got in zip(points, results, strict=True):
        want = hand.vector_jacobian_product(point, ["x", "y"], ["result"], {"result": np.float32(1.0)})
        close(got["x"], want["x"])
        close(got["y"], want["y"])


# A physics kernel with loops and a branch: examples/burgers_ad (float64),
# checked against central finite differences of its own apply.
BURGERS = {
    "u": np.sin(np.linspace(0, 2 * np.pi, 16, endpoint=False)) + 0.3 * np.cos(np.arange(16.0)),
    "nu": 0.08,
    "dt": 2e-4,
    "dx": 0.05,
    "steps": 3,
}


@pytest.fixture(scope="module")
def burgers():
    return Tesseract.from_library(example("burgers_ad"))


def central_difference(t, inputs: dict, name: str, direction: np.ndarray, eps: float = 1e-6) -> dict:
    def shifted(sign: float) -> dict:
        moved = dict(inputs)
        moved[name] = np.asarray(inputs[name], np.float64) + sign * eps * direction
        return t.apply(moved)

    plus, minus = shifted(1.0), shifted(-1.0)
    return {k: (np.asarray(plus[k]) - np.asarray(minus[k])) / (2 * eps) for k in plus}


def test_workers_tapes_on_disk_are_their_own(tmp_path, monkeypatch):
    """Tapes too long for ADOL-C's buffers go to files, once named after the
    tag alone in the working directory: two workers of one server swept each
    other's, which crashed one (signal 11) or failed the call. Each process
    writes to its own directory, removed when it ends."""
    monkeypatch.setenv("TESSCPP_TAPE_DIR", str(tmp_path))
    grid = np.sin(np.linspace(0, 2 * np.pi, 3000, endpoint=False))
    points = [{**BURGERS, "u": grid * (1 + 0.1 * k), "dx": 0.01, "steps": 150} for k in range(4)]
    cotangent = {"energy": np.float64(1.0)}
    with Tesseract.from_source(example("burgers_ad"), runtime_config={"num_workers": 2}) as served:
        one_by_one = [served.vector_jacobian_product(p, ["u", "nu"], ["energy"], cotangent) for p in points]
        at_once = vjps_at_once(served, points * 2, ["u", "nu"], ["energy"], cotangent, threads=4)
        directories = list(tmp_path.glob("tesscpp-tapes-*"))
        assert directories and all(any(d.glob("ADOLC-*.tap")) for d in directories)
    for want, got in zip(one_by_one * 2, at_once, strict=True):
        np.testing.assert_array_equal(got["u"], want["u"])
        np.testing.assert_array_equal(got["nu"], want["nu"])
    assert not list(tmp_path.iterdir())  # the workers removed theirs as they ended


def test_burgers_jvp_equals_finite_differences(burgers):
    rng = np.random.default_rng(3)
    for name in ("u", "nu"):
        direction = rng.standard_normal(np.shape(BURGERS[name]))
        fd = central_difference(burgers, BURGERS, name, direction)
        jvp = burgers.jacobian_vector_product(BURGERS, [name], ["u_next", "energy"], {name: direction})
        for out in ("u_next", "energy"):
            np.testing.assert_allclose(jvp[out], fd[out], rtol=1e-6, atol=1e-8)


def test_burgers_vjp_jacobian_and_jvp_agree(burgers):
    rng = np.random.default_rng(4)
    cotangent = {"u_next": rng.standard_normal(16), "energy": np.float64(0.7)}
    vjp = burgers.vector_jacobian_product(BURGERS, ["u", "nu"], ["u_next", "energy"], cotangent)
    jac = burgers.jacobian(BURGERS, ["u", "nu"], ["u_next", "energy"])
    assert jac["u_next"]["u"].shape == (16, 16) and jac["energy"]["u"].shape == (16,)
    assert jac["u_next"]["nu"].shape == (16,) and np.shape(jac["energy"]["nu"]) == ()
    # w^T J, from the jacobian's blocks
    want_u = cotangent["u_next"] @ jac["u_next"]["u"] + cotangent["energy"] * jac["energy"]["u"]
    want_nu = cotangent["u_next"] @ jac["u_next"]["nu"] + cotangent["energy"] * jac["energy"]["nu"]
    np.testing.assert_allclose(vjp["u"], want_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vjp["nu"], want_nu, rtol=1e-12, atol=1e-12)
    # <w, J t> == <w^T J, t> for a tangent t
    t = rng.standard_normal(16)
    jvp = burgers.jacobian_vector_product(BURGERS, ["u"], ["u_next", "energy"], {"u": t})
    lhs = cotangent["u_next"] @ jvp["u_next"] + cotangent["energy"] * jvp["energy"]
    np.testing.assert_allclose(lhs, vjp["u"] @ t, rtol=1e-10)


def test_burgers_differentiates_only_what_is_asked(burgers):
    vjp = burgers.vector_jacobian_product(BURGERS, ["nu"], ["energy"], {"energy": np.float64(1.0)})
    assert set(vjp) == {"nu"}
    jac = burgers.jacobian(BURGERS, ["u"], ["energy"])
    assert set(jac) == {"energy"} and set(jac["energy"]) == {"u"}
    jvp = burgers.jacobian_vector_product(BURGERS, ["u"], ["u_next"], {"u": np.ones(16)})
    assert set(jvp) == {"u_next"}


def test_burgers_abstract_eval_is_derived_from_the_shapes(burgers):
    for cells in (3, 7, 1000):
        abstract = {"u": {"shape": [cells], "dtype": "float64"}, "nu": {"shape": [], "dtype": "float64"}}
        assert burgers.abstract_eval(abstract) == {
            "u_next": {"shape": [cells], "dtype": "float64"},
            "energy": {"shape": [], "dtype": "float64"},
        }
    assert "/abstract_eval" in burgers.openapi_schema["paths"]
    with pytest.raises(Exception, match="u needs at least 3 cells"):  # the function's own refusal
        burgers.abstract_eval({"u": {"shape": [2], "dtype": "float64"}, "nu": {"shape": [], "dtype": "float64"}})


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("rosenbrock_ad", {"inputs": {"x": 0.5, "y": -1.25}}),
        ("burgers_ad", {"inputs": {**{k: v for k, v in BURGERS.items() if k != "u"}, "u": BURGERS["u"].tolist()}}),
    ],
)
def test_check_gradients_passes(name, payload):
    """The SDK's own gradient check (central differences of apply; of the VJP
    for the HVP) on the derived endpoints: jacobian, JVP, VJP and the HVP."""
    cli = os.environ.get("TESSCPP_CLI")
    if not cli:
        pytest.fail("TESSCPP_CLI is not set (CTest sets it)")
    done = subprocess.run(
        [cli, "check-gradients", str(example(name)), json.dumps(payload)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("passed") == 4, done.stdout


def test_the_torch_bridge_trains_through_derived_endpoints():
    """apply_tesseract's gradients come from the derived VJP; a few optimiser
    steps move the same way as through the hand-written component."""
    torch = pytest.importorskip("torch")
    from tesscpp.torch import apply_tesseract

    paths = []
    for name in ("rosenbrock_ad", "univariate"):
        t = Tesseract.from_library(example(name))
        xy = torch.tensor([-1.2, 1.0], requires_grad=True)
        optimizer = torch.optim.Adam([xy], lr=0.2)
        for _ in range(20):
            optimizer.zero_grad()
            apply_tesseract(t, {"x": xy[0], "y": xy[1]})["result"].backward()
            optimizer.step()
        paths.append(xy.detach().numpy())
    np.testing.assert_allclose(paths[0], paths[1], rtol=1e-5)
    assert not np.allclose(paths[0], [-1.2, 1.0])  # it moved
