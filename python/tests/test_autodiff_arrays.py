"""Array-form derived derivatives (tesscpp/autodiff_arrays.h, Dr.Jit):
examples/burgers_array is examples/burgers_ad written over whole arrays, and
the fixture rosenbrock_array is examples/univariate's function, whose
derivatives are written by hand there. Every derived endpoint must give the
other forms' answers, in process and served, from several threads, through
check-gradients (which must also catch a planted error) and the torch bridge.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import in_process_or_served, required_dir, vjps_at_once
from tesscpp import Tesseract


def built(directory: str, name: str) -> Path:
    path = required_dir(directory) / f"lib{name}.so"
    if not path.exists():
        pytest.fail(f"{path} was not built: CMake found no Dr.Jit (scripts/deps/requirements-dev.txt installs it)")
    return path


def example(name: str) -> Path:
    return built("TESSCPP_EXAMPLES_DIR", name)


def fixture(name: str) -> Path:
    return built("TESSCPP_BRIDGE_FIXTURES", name)


# The same physics as test_autodiff.py's Burgers case, with more cells.
RNG = np.random.default_rng(11)
BURGERS = {
    "u": np.sin(np.linspace(0, 2 * np.pi, 64, endpoint=False)) + 0.3 * RNG.standard_normal(64),
    "nu": 0.08,
    "dt": 2e-4,
    "dx": 0.05,
    "steps": 3,
}
OUTPUTS = ["u_next", "energy"]


@pytest.fixture(scope="module", params=["in-process", "served"])
def burgers(request):
    """(array form, scalar form) of the Burgers step."""
    yield from in_process_or_served(request.param, example("burgers_array"), example("burgers_ad"))


def same(a, b, rtol: float = 1e-13) -> None:
    """Equal to rounding: the two forms sum in different orders."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def test_burgers_apply_and_derivatives_equal_the_scalar_form(burgers):
    arrays, scalar = burgers
    for out in OUTPUTS:
        same(arrays.apply(BURGERS)[out], scalar.apply(BURGERS)[out])
    tangent = {"u": RNG.standard_normal(64), "nu": np.float64(0.3)}
    cotangent = {"u_next": RNG.standard_normal(64), "energy": np.float64(-0.4)}
    for wrt in (["u", "nu"], ["u"], ["nu"]):
        for of in (OUTPUTS, ["u_next"], ["energy"]):
            jvp = arrays.jacobian_vector_product(BURGERS, wrt, of, {k: tangent[k] for k in wrt})
            want = scalar.jacobian_vector_product(BURGERS, wrt, of, {k: tangent[k] for k in wrt})
            assert set(jvp) == set(want) == set(of)
            for out in of:
                same(jvp[out], want[out])
            vjp = arrays.vector_jacobian_product(BURGERS, wrt, of, {k: cotangent[k] for k in of})
            want = scalar.vector_jacobian_product(BURGERS, wrt, of, {k: cotangent[k] for k in of})
            assert set(vjp) == set(want) == set(wrt)  # only the requested inputs
            for name in wrt:
                same(vjp[name], want[name])
            jac = arrays.jacobian(BURGERS, wrt, of)
            want = scalar.jacobian(BURGERS, wrt, of)
            assert jac.keys() == want.keys()
            for out in of:
                assert jac[out].keys() == want[out].keys() == set(wrt)
                for name in wrt:
                    same(jac[out][name], want[out][name])


def test_burgers_jacobian_takes_the_smaller_side(burgers):
    """64 cells in, 65 elements out: forward sweeps; one output element:
    reverse sweeps. Both must give the same blocks as the scalar form."""
    arrays, scalar = burgers
    for wrt, of in ((["u", "nu"], OUTPUTS), (["u"], ["energy"]), (["nu"], ["u_next"])):
        jac, want = arrays.jacobian(BURGERS, wrt, of), scalar.jacobian(BURGERS, wrt, of)
        for out in of:
            for name in wrt:
                same(jac[out][name], want[out][name])


def test_an_output_and_its_sum_from_one_array():
    """p = x * a and total = sum(p) (ctx.OutputSum) share one array. Six
    input elements against four output elements: the jacobian goes by rows,
    each output seeded in turn, and seeding total must not undo p's seed.
    Apply, JVP and VJP against the products' own derivatives."""
    t = Tesseract.from_library(fixture("sum_array"))
    x, a = np.array([1.5, -2.0, 0.5]), np.array([3.0, 0.25, -4.0])
    point = {"x": x, "a": a}
    out = t.apply(point)
    np.testing.assert_array_equal(out["p"], x * a)
    np.testing.assert_allclose(out["total"], np.sum(x * a), rtol=1e-15)
    jac = t.jacobian(point, ["x", "a"], ["p", "total"])
    np.testing.assert_array_equal(jac["p"]["x"], np.diag(a))
    np.testing.assert_array_equal(jac["p"]["a"], np.diag(x))
    np.testing.assert_array_equal(jac["total"]["x"], a)
    np.testing.assert_array_equal(jac["total"]["a"], x)
    w, c = np.array([1.0, -1.0, 2.0]), 0.5
    vjp = t.vector_jacobian_product(point, ["x", "a"], ["p", "total"], {"p": w, "total": np.float64(c)})
    np.testing.assert_allclose(vjp["x"], a * (w + c), rtol=1e-15)
    np.testing.assert_allclose(vjp["a"], x * (w + c), rtol=1e-15)
    tx, ta = np.array([0.5, 1.0, -1.0]), np.array([2.0, 0.0, 1.0])
    jvp = t.jacobian_vector_product(point, ["x", "a"], ["p", "total"], {"x": tx, "a": ta})
    np.testing.assert_allclose(jvp["p"], tx * a + x * ta, rtol=1e-15)
    np.testing.assert_allclose(jvp["total"], np.sum(tx * a + x * ta), rtol=1e-15)


def test_permute_gathers_both_ways():
    """autodiff::Permute with a reversal and a roll (permutations that are not
    neighbour shifts), and a third result whose gradient never arrives:
    apply, jacobian, JVP and VJP against numpy's reversal and roll; a
    permutation one element short is refused by name. The roll divides by
    ctx.Index at 5 elements, not a multiple of the CPU kernel's vector width:
    with the recording's parameters read by gather (0 in the last vector's
    unused lanes) the division by zero trapped and killed the process.
    With in_branch the same inside drjit::if_stmt, a symbolic scope where
    Permute falls back to drjit::gather (its own operation there left a
    scatter unevaluated: "remains dirty despite an attempt to evaluate it")."""
    t = Tesseract.from_library(fixture("permute_array"))
    x = np.array([1.5, -2.0, 0.5, 3.0, -0.25])
    for shift, in_branch in itertools.product((1, 3, -2), (False, True)):
        point = {"x": x, "shift": shift, "in_branch": in_branch}
        out = t.apply(point)
        np.testing.assert_array_equal(out["y"], x[::-1] * x)
        np.testing.assert_array_equal(out["z"], np.roll(x, shift) ** 2)
        w, v = np.array([1.0, -1.0, 2.0, 0.5, 3.0]), np.array([0.25, 2.0, -1.0, 1.0, -3.0])
        vjp = t.vector_jacobian_product(point, ["x"], ["y", "z"], {"y": w, "z": v})
        want = w * x[::-1] + (w * x)[::-1] + 2 * x * np.roll(v, -shift)
        np.testing.assert_allclose(vjp["x"], want, rtol=1e-15)
        jvp = t.jacobian_vector_product(point, ["x"], ["y", "z"], {"x": w})
        np.testing.assert_allclose(jvp["y"], w[::-1] * x + x[::-1] * w, rtol=1e-15)
        np.testing.assert_allclose(jvp["z"], 2 * np.roll(x, shift) * np.roll(w, shift), rtol=1e-15)
        jac = t.jacobian(point, ["x"], ["z"])
        np.testing.assert_array_equal(jac["z"]["x"], np.roll(np.diag(2 * x), shift, axis=0))
    with pytest.raises(Exception, match=r"autodiff::Permute: permutation 0 has 4 and 4 elements, the array 5"):
        t.apply({"x": x, "wrong_width": True})


def test_burgers_abstract_eval_and_bad_shapes(burgers):
    arrays, _ = burgers
    for cells in (3, 1000):
        abstract = {"u": {"shape": [cells], "dtype": "float64"}, "nu": {"shape": [], "dtype": "float64"}}
        assert arrays.abstract_eval(abstract) == {
            "u_next": {"shape": [cells], "dtype": "float64"},
            "energy": {"shape": [], "dtype": "float64"},
        }
    with pytest.raises(Exception, match="u needs at least 3 cells"):
        arrays.apply({**BURGERS, "u": np.zeros(2)})


def test_burgers_from_eight_threads_at_once(burgers):
    arrays, scalar = burgers
    points = [{**BURGERS, "u": BURGERS["u"] * (0.5 + 0.1 * i), "nu": 0.01 * (i + 1)} for i in range(32)]
    results = vjps_at_once(arrays, points, ["u", "nu"], ["energy"], {"energy": np.float64(1.0)})
    for point, got in zip(points, results, strict=True):
        want = scalar.vector_jacobian_product(point, ["u", "nu"], ["energy"], {"energy": np.float64(1.0)})
        same(got["u"], want["u"])
        same(got["nu"], want["nu"])


POINTS = [
    {"x": 0.5, "y": -1.25, "a": 1.0, "b": 100.0},
    {"x": -1.5, "y": 2.0, "a": 0.5, "b": 3.0},
    {"x": 1.0, "y": 1.0, "a": 1.0, "b": 100.0},  # the minimum: zero gradient
]


def close32(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=4 * np.finfo(np.float32).eps, atol=1e-6)


@pytest.mark.parametrize("point", POINTS)
def test_rosenbrock_equals_the_hand_written_derivatives(point):
    arrays = Tesseract.from_library(fixture("rosenbrock_array"))
    hand = Tesseract.from_library(example("univariate"))
    inputs = {k: np.float32(v) for k, v in point.items()}
    close32(arrays.apply(inputs)["result"], hand.apply(inputs)["result"])
    for wrt in (["x", "y"], ["x"], ["y"]):
        jac, want = arrays.jacobian(inputs, wrt, ["result"]), hand.jacobian(inputs, wrt, ["result"])
        for name in wrt:
            close32(jac["result"][name], want["result"][name])
        tangent = {name: np.float32(0.75 - i) for i, name in enumerate(wrt)}
        close32(
            arrays.jacobian_vector_product(inputs, wrt, ["result"], tangent)["result"],
            hand.jacobian_vector_product(inputs, wrt, ["result"], tangent)["result"],
        )
        cotangent = {"result": np.float32(-1.5)}
        vjp = arrays.vector_jacobian_product(inputs, wrt, ["result"], cotangent)
        want = hand.vector_jacobian_product(inputs, wrt, ["result"], cotangent)
        for name in wrt:
            close32(vjp[name], want[name])


def check_gradients(path: Path, payload: dict) -> subprocess.CompletedProcess:
    cli = os.environ.get("TESSCPP_CLI")
    if not cli:
        pytest.fail("TESSCPP_CLI is not set (CTest sets it)")
    return subprocess.run(
        [cli, "check-gradients", str(path), json.dumps(payload)], capture_output=True, text=True, timeout=300
    )


def test_check_gradients_passes_and_catches_a_planted_error():
    """Four endpoints pass: jacobian, JVP, VJP, and the HVP by differences of the VJP."""
    burgers = {"inputs": {**{k: v for k, v in BURGERS.items() if k != "u"}, "u": BURGERS["u"].tolist()}}
    done = check_gradients(example("burgers_array"), burgers)
    assert done.returncode == 0 and done.stdout.count("passed") == 4, done.stdout + done.stderr
    rosenbrock = {"inputs": {"x": 0.5, "y": -1.25}}
    done = check_gradients(fixture("rosenbrock_array"), rosenbrock)
    assert done.returncode == 0 and done.stdout.count("passed") == 4, done.stdout + done.stderr
    # y detached: apply is unchanged, every derivative of y is zero.
    done = check_gradients(fixture("rosenbrock_array_planted"), rosenbrock)
    assert done.returncode != 0 and "failed" in done.stdout, done.stdout + done.stderr


def test_the_torch_bridge_trains_through_the_array_form():
    """apply_tesseract's gradients come from the derived VJP; the optimiser
    moves as through the hand-written component."""
    torch = pytest.importorskip("torch")
    from tesscpp.torch import apply_tesseract

    paths = []
    for t in (Tesseract.from_library(fixture("rosenbrock_array")), Tesseract.from_library(example("univariate"))):
        xy = torch.tensor([-1.2, 1.0], requires_grad=True)
        optimizer = torch.optim.Adam([xy], lr=0.2)
        for _ in range(20):
            optimizer.zero_grad()
            apply_tesseract(t, {"x": xy[0], "y": xy[1]})["result"].backward()
            optimizer.step()
        paths.append(xy.detach().numpy())
    np.testing.assert_allclose(paths[0], paths[1], rtol=1e-5)
    assert not np.allclose(paths[0], [-1.2, 1.0])  # it moved


# A process with Dr.Jit's log at Info level (StartDrJit reads it once per
# process): each traced call logs the kernels it launches, a replayed one
# launches them without tracing and logs nothing. Calls come as JSON: the
# library, the VJP's inputs and outputs, the input point, and the cotangent of
# each output: "ones" (an array like the first input), a number, or "input"
# (the first input array itself, the same memory).
LOGGED_CALLS = """
import json, sys
import numpy as np
from tesscpp import Tesseract
out, calls = sys.argv[1], json.loads(sys.argv[2])
loaded, answers = {}, []
def aligned(values):  # 128-byte aligned memory is mapped, not copied
    raw = np.empty(len(values) + 16)
    start = (-raw.ctypes.data % 128) // 8
    array = raw[start:start + len(values)]
    array[:] = values
    return array
for i, call in enumerate(calls):
    t = loaded.setdefault(call["library"], Tesseract.from_library(call["library"], output_path=out))
    inputs = {k: aligned(v) if isinstance(v, list) else v for k, v in call["point"].items()}
    first = next(v for v in inputs.values() if isinstance(v, np.ndarray))
    cotangent = {k: first if w == "input" else aligned(np.ones(len(first))) if w == "ones" else w
                 for k, w in call["cotangent"].items()}
    vjp = t.vector_jacobian_product(inputs, call["wrt"], list(cotangent), cotangent, run_id=f"call{i}")
    answers.append({k: np.asarray(v).tolist() for k, v in vjp.items()})
print(json.dumps(answers))
"""


def logged_vjps(tmp_path: Path, calls: list[dict], level: str = "info") -> tuple[list, list[str]]:
    """The VJPs `calls` describe, in order in one fresh process: the answers
    and each call's Dr.Jit log at `level`."""
    env = {**os.environ, "TESSCPP_DRJIT_LOG": level}
    for call in calls:
        call["library"] = str(call["library"])
        call["point"] = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in call["point"].items()}
    done = subprocess.run(
        [sys.executable, "-c", LOGGED_CALLS, str(tmp_path), json.dumps(calls)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    logs = [(tmp_path / f"run_call{i}" / "logs" / "tesseract.log").read_text() for i in range(len(calls))]
    return json.loads(done.stdout), logs


def burgers_vjp_calls(points: list, wrt: list, cotangent: dict) -> list[dict]:
    return [{"library": example("burgers_array"), "point": p, "wrt": wrt, "cotangent": cotangent} for p in points]


def assert_scalar_form_vjps(calls: list[dict], answers: list) -> None:
    scalar = Tesseract.from_library(example("burgers_ad"))
    for call, got in zip(calls, answers, strict=True):
        point = {k: np.asarray(v) if isinstance(v, list) else v for k, v in call["point"].items()}
        cotangent = {
            k: point["u"] if w == "input" else np.ones(len(point["u"])) if w == "ones" else np.float64(w)
            for k, w in call["cotangent"].items()
        }
        want = scalar.vector_jacobian_product(point, call["wrt"], list(cotangent), cotangent)
        for name in call["wrt"]:
            same(np.asarray(got[name]), want[name])


def test_repeated_calls_replay_the_first_ones_recording(tmp_path):
    """Same shapes and parameters, new values: the first VJP is traced, the
    others replay its recording, and every answer is the scalar form's. A
    gradient that is zero everywhere (nu's, with no steps) is an output too."""
    points = [{**BURGERS, "u": BURGERS["u"] * s, "nu": 0.05 * s} for s in (1.0, -0.5, 2.0)]
    still = [{**p, "steps": 0} for p in points]
    cotangent = {"u_next": "ones", "energy": 1.0}
    calls = burgers_vjp_calls(points, ["u", "nu"], cotangent) + burgers_vjp_calls(still, ["u", "nu"], cotangent)
    answers, logs = logged_vjps(tmp_path, calls)
    assert "launching" in logs[0] and "launching" in logs[3]
    assert all("launching" not in log for log in logs[1:3] + logs[4:]), logs
    assert_scalar_form_vjps(calls, answers)
    assert all(answer["nu"] == 0.0 for answer in answers[3:])


def test_vjp_products_are_written_in_place(tmp_path):
    """A VJP's float64 products are written into the answered tensors by their
    own last kernel (Destinations in autodiff_arrays.h): traced, the product is
    scattered straight into the tensor's mapped memory; replayed, the
    recording's output is that call's input (its tensor), so nothing is
    copied after the kernels. The answers are the scalar form's."""
    points = [{**BURGERS, "u": BURGERS["u"] * s} for s in (1.0, -0.5, 2.0)]
    calls = burgers_vjp_calls(points, ["u"], {"u_next": "ones", "energy": 1.0})
    answers, logs = logged_vjps(tmp_path, calls, level="debug")
    assert re.search(r"jit_var_scatter\(\): .*\[direct\]", logs[0]), logs[0]
    for log in logs[1:]:
        assert re.search(r"replay\(\): launching kernel", log), log
        assert re.search(r"output 0: from slot s\d+ = input\[\d+\]", log), log
    assert_scalar_form_vjps(calls, answers)


def test_each_recording_replays_its_own_parameters(tmp_path):
    """Two time steps by turns: each is a key of its own, recorded once, and
    each replay reads the parameters (dt, dx, the grid size) its recording
    kept in its own memory, setting none of them: Dr.Jit's debug log of a
    replay shows no one-element memset (an opaque parameter made each time)."""
    points = [
        {**BURGERS, "u": BURGERS["u"] * s, "dt": dt} for s, dt in ((1.0, 2e-4), (0.5, 5e-4), (-1.0, 2e-4), (2.0, 5e-4))
    ]
    calls = burgers_vjp_calls(points, ["u", "nu"], {"u_next": "ones", "energy": 1.0})
    answers, logs = logged_vjps(tmp_path, calls, level="debug")
    assert all("launching" in log for log in logs[:2]), logs
    replays = logs[2:]
    assert all("replay(): launching" in log for log in replays), replays
    assert all(re.search(r"memset_async\(ptr=0x[0-9a-f]+, size=1,", log) is None for log in replays), replays
    assert_scalar_form_vjps(calls, answers)
    # The step matters: the other key's parameters would have given another answer.
    swapped = {**points[2], "dt": 5e-4}
    other = Tesseract.from_library(example("burgers_ad")).vector_jacobian_product(
        swapped, ["u"], ["u_next", "energy"], {"u_next": np.ones(len(swapped["u"])), "energy": np.float64(1.0)}
    )
    assert not np.allclose(other["u"], answers[2]["u"], rtol=1e-6)


def test_one_array_passed_twice_is_its_own_recording(tmp_path):
    """u's memory as u_next's cotangent too: Dr.Jit knows recorded inputs by
    their memory, so that call must not be replayed for calls with two
    arrays, nor they for it."""
    point = {**BURGERS, "u": BURGERS["u"]}
    calls = burgers_vjp_calls([point], ["u"], {"u_next": "input"}) + burgers_vjp_calls(
        [point, point], ["u"], {"u_next": "ones"}
    )
    answers, logs = logged_vjps(tmp_path, calls)
    assert "launching" in logs[0] and "launching" in logs[1] and "launching" not in logs[2], logs
    assert_scalar_form_vjps(calls, answers)


@pytest.mark.parametrize("how", [0, 1], ids=["reads-on-the-host", "loads-a-table"])
def test_what_cannot_be_recorded_is_traced_every_time(tmp_path, how):
    """A branch on a value read on the host, or a table loaded from host
    memory, would be baked into a recording: such calls are traced each time
    (each one's log shows its kernels) and follow their own inputs. Recording
    and replaying work on the same thread afterwards."""
    xs = [np.array([1.5, -2.0, 0.5]), np.array([-1.0, 4.0, 2.0]), np.array([3.0, 1.0, -1.0])]
    refused = [
        {"library": fixture("branch_array"), "point": {"x": x, "how": how}, "wrt": ["x"], "cotangent": {"y": "ones"}}
        for x in xs
    ]
    points = [{**BURGERS, "u": BURGERS["u"] * s} for s in (1.0, 2.0)]
    calls = refused + burgers_vjp_calls(points, ["u"], {"u_next": "ones", "energy": 1.0})
    answers, logs = logged_vjps(tmp_path, calls)
    assert all("launching" in log for log in logs[:3]), logs
    for x, got in zip(xs, answers[:3], strict=True):
        factor = (2.0 if x[0] > 0 else -3.0) if how == 0 else np.arange(1.0, 4.0)
        np.testing.assert_array_equal(got["x"], factor * np.ones(3))
    assert "launching" in logs[3] and "launching" not in logs[4], logs
    assert_scalar_form_vjps(calls[3:], answers[3:])


# Calls of any derived endpoint, in order, in one fresh process; each answer
# as lists. A call: the library, "apply", "jvp" or "vjp", the point, and for
# the derivatives the inputs and outputs and the tangents or cotangents.
ENDPOINT_CALLS = """
import json, sys
import numpy as np
from tesscpp import Tesseract
out, calls = sys.argv[1], json.loads(sys.argv[2])
loaded, answers = {}, []
as_arrays = lambda d: {k: np.asarray(v, dtype=np.float64) if isinstance(v, list) else v for k, v in d.items()}
for i, call in enumerate(calls):
    t = loaded.setdefault(call["library"], Tesseract.from_library(call["library"], output_path=out))
    point = as_arrays(call["point"])
    if call["endpoint"] == "apply":
        answer = t.apply(point, run_id=f"call{i}")
    elif call["endpoint"] == "jvp":
        answer = t.jacobian_vector_product(point, call["wrt"], call["of"], as_arrays(call["vector"]), run_id=f"call{i}")
    else:
        answer = t.vector_jacobian_product(point, call["wrt"], call["of"], as_arrays(call["vector"]), run_id=f"call{i}")
    answers.append({k: np.asarray(v).tolist() for k, v in answer.items()})
print(json.dumps(answers))
"""


def endpoint_calls(tmp_path: Path, calls: list[dict], replay: bool) -> tuple[list, list[str]]:
    """The answers of `calls` in a fresh process (replays on or off), and each call's Dr.Jit log."""
    env = {**os.environ, "TESSCPP_DRJIT_LOG": "info", "TESSCPP_DRJIT_REPLAY": "1" if replay else "0"}
    out = tmp_path / ("replayed" if replay else "traced")
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", ENDPOINT_CALLS, str(out), json.dumps(calls)],
                          capture_output=True, text=True, timeout=300, env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    logs = [(out / f"run_call{i}" / "logs" / "tesseract.log").read_text() for i in range(len(calls))]
    return json.loads(done.stdout), logs


def _burgers_calls(endpoint: str) -> list[dict]:
    """Three calls of one key (new values of u and nu, of the tangents or
    cotangents), then one with another time step (a new key)."""
    rng = np.random.default_rng(5)
    n = len(BURGERS["u"])
    calls = []
    for s, dt in ((1.0, 2e-4), (-0.5, 2e-4), (2.0, 2e-4), (1.5, 4e-4)):
        point = {**BURGERS, "u": (BURGERS["u"] * s).tolist(), "nu": 0.05 * abs(s), "dt": dt}
        call = {"library": str(example("burgers_array")), "endpoint": endpoint, "point": point}
        if endpoint == "jvp":
            call.update(wrt=["u", "nu"], of=OUTPUTS, vector={"u": rng.standard_normal(n).tolist(),
                                                              "nu": float(rng.standard_normal())})  # fmt: skip
        elif endpoint == "vjp":
            call.update(wrt=["u", "nu"], of=OUTPUTS, vector={"u_next": rng.standard_normal(n).tolist(),
                                                              "energy": float(rng.standard_normal())})  # fmt: skip
        calls.append(call)
    return calls


@pytest.mark.parametrize("endpoint", ["apply", "jvp", "vjp"])
def test_replayed_answers_are_the_traced_ones_bit_for_bit(tmp_path, endpoint):
    """Apply, JVP and VJP replayed with new inputs, new tangents or cotangents,
    and a changed non-differentiable input (another key), against the same
    calls with TESSCPP_DRJIT_REPLAY=0: every answer equal, bit for bit. The
    second and third calls were replays (their logs launch nothing traced),
    the fourth a new recording."""
    calls = _burgers_calls(endpoint)
    replayed, logs = endpoint_calls(tmp_path, calls, replay=True)
    traced, _ = endpoint_calls(tmp_path, calls, replay=False)
    assert "launching" in logs[0] and "launching" in logs[3], logs
    assert all("launching" not in log for log in logs[1:3]), logs
    for got, want in zip(replayed, traced, strict=True):
        assert got.keys() == want.keys()
        for name in got:
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)


@pytest.mark.parametrize("endpoint", ["apply", "jvp", "vjp"])
def test_a_differentiable_input_read_through_inputs_is_never_replayed(tmp_path, endpoint):
    """branch_array with how = 2 scales x by max |x| read through
    ctx.inputs(), which no replay key covers: each call is traced (its log
    launches kernels) and scales by its own maximum, as with replays off."""
    xs = [[1.5, -2.0, 0.5], [-1.0, 4.0, 2.0], [3.0, 1.0, -1.0]]
    calls = []
    for x in xs:
        call = {"library": str(fixture("branch_array")), "endpoint": endpoint, "point": {"x": x, "how": 2}}
        if endpoint != "apply":
            call.update(wrt=["x"], of=["y"], vector={("x" if endpoint == "jvp" else "y"): [1.0, 1.0, 1.0]})
        calls.append(call)
    replayed, logs = endpoint_calls(tmp_path, calls, replay=True)
    traced, _ = endpoint_calls(tmp_path, calls, replay=False)
    assert all("launching" in log for log in logs), logs
    assert replayed == traced
    for x, got in zip(xs, replayed, strict=True):
        factor = max(abs(v) for v in x)
        answer = got["x"] if endpoint == "vjp" else got["y"]
        np.testing.assert_array_equal(answer, np.asarray(x) * factor if endpoint == "apply" else [factor] * 3)


def test_each_endpoint_keeps_its_eight_most_recent_keys(tmp_path):
    """Time steps are keys. Eight new ones are recorded; the ninth evicts the
    least recently used (the first is used again in between, so the second
    goes), and a key evicted is traced again. Then a run of nine new keys:
    eight are recorded, the ninth only traced, as is a tenth call of it, until
    a replay (of the eighth) lets it be recorded (docs/autodiff.md)."""
    steps = [1e-4 * (k + 1) for k in range(18)]
    order = [*range(8), 0, 8, 2, 1, 0, *range(9, 18), 17, 16, 17, 17]
    calls = burgers_vjp_calls([{**BURGERS, "dt": steps[k]} for k in order], ["u"], {"u_next": "ones", "energy": 1.0})
    answers, logs = logged_vjps(tmp_path, calls)
    traced = ["launching" in log for log in logs]
    expected = [True] * 8 + [False, True, False, True, False] + [True] * 9 + [True, False, True, False]
    assert traced == expected, traced
    assert_scalar_form_vjps(calls, answers)
