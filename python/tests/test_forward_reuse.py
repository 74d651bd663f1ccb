"""Forward reuse (docs/forward-reuse.md) from Python: the client's
ForwardReuse, tesscpp.torch's training step costing one forward solve, and
peers on either side unaffected.

The `kept` fixture counts its solves and reports the count in each apply's
`solves` output, so the tests read from the component itself how many forward
solves a step cost.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tesseract_core
import torch

import tesscpp
from conftest import fixture_api, fixture_library, required_dir
from served_metrics import metric_values
from tesscpp.torch import apply_tesseract

X = np.array([1.0, 2.0, 3.0])
W = np.array([1.0, 0.0, -1.0])


def expected_vjp(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    # y = x * s, s = sum(x^2): dy_i/dx_j = delta_ij s + 2 x_i x_j.
    return w * (x @ x) + 2 * x * (w @ x)


@pytest.fixture(scope="module", params=["cpp", "python"])
def kept(request: pytest.FixtureRequest):
    """The component as a C++ library, or as a JAX tesseract_api.py using
    tesscpp.reuse's helpers, both served by tesscpp."""
    if request.param == "cpp":
        served = tesscpp.Tesseract.from_source(fixture_library("kept"))
    else:
        served = tesscpp.Tesseract.from_source(fixture_api("kept"), python_executable=sys.executable)
    with served:
        yield served


def solves_so_far(tesseract: tesscpp.Tesseract) -> int:
    """The server's solve count after one more (plain) apply, less that apply."""
    return int(tesseract.apply({"x": np.array([0.0])})["solves"]) - 1


def test_the_client_keeps_refers_and_releases(kept: tesscpp.Tesseract) -> None:
    keep_refer_release(kept)


def keep_refer_release(kept: tesscpp.Tesseract) -> None:
    """An apply keeps, a VJP at its inputs hits without solving, one at other
    inputs recomputes, a released reference is gone."""
    keep = tesscpp.ForwardReuse(keep=True)
    kept.apply({"x": X}, reuse=keep)
    assert keep.residuals
    before = solves_so_far(kept)
    refer = tesscpp.ForwardReuse(residuals=keep.residuals)
    vjp = kept.vector_jacobian_product({"x": X}, ["x"], ["y"], {"y": W}, reuse=refer)
    assert refer.used == "hit"
    assert solves_so_far(kept) - before == 1  # solves_so_far's own apply only
    np.testing.assert_allclose(vjp["x"], expected_vjp(X, W))

    # Another point recomputes, with the right answer.
    other = np.array([1.0, 2.0, 4.0])
    refer = tesscpp.ForwardReuse(residuals=keep.residuals)
    vjp = kept.vector_jacobian_product({"x": other}, ["x"], ["y"], {"y": W}, reuse=refer)
    assert refer.used == "recomputed: inputs differ"
    np.testing.assert_allclose(vjp["x"], expected_vjp(other, W))

    # Released: sent with the next call that takes part, then gone.
    kept.release_residuals(keep.residuals)
    kept.apply({"x": X}, reuse=tesscpp.ForwardReuse())
    refer = tesscpp.ForwardReuse(residuals=keep.residuals)
    kept.vector_jacobian_product({"x": X}, ["x"], ["y"], {"y": W}, reuse=refer)
    assert refer.used == "recomputed: unknown"


def test_a_torch_training_step_solves_once(kept: tesscpp.Tesseract) -> None:
    x = torch.tensor(X, requires_grad=True)
    outputs = apply_tesseract(kept, {"x": x})
    after_forward = int(outputs["solves"])
    # /metrics counts what the server holds...
    held = metric_values(kept)
    assert held["tesscpp_residual_entries"] >= 1
    assert held['tesscpp_residual_bytes{memory="host"}'] > 0
    loss = (outputs["y"] * torch.tensor(W)).sum()
    loss.backward()
    # The backward solved nothing: the next apply is the next solve.
    assert solves_so_far(kept) == after_forward
    np.testing.assert_allclose(x.grad.numpy(), expected_vjp(X, W))
    # ...the hit, and the state the VJP freed once it had used it (it named
    # its own reference in its release list), with nothing left to send.
    metrics = metric_values(kept)
    assert metrics['tesscpp_residual_lookups_total{outcome="hit"}'] >= 1
    assert metrics["tesscpp_residual_entries"] == held["tesscpp_residual_entries"] - 1
    assert not kept._shared.done_residuals

    # Without a backward to come (no grad), nothing is asked to be kept, and
    # a backward through a graph made so is not possible anyway.
    with torch.no_grad():
        apply_tesseract(kept, {"x": torch.tensor(X, requires_grad=True)})

    del outputs, loss
    gc.collect()
    assert not kept._shared.done_residuals  # released once, by the VJP


def test_in_process_tesseracts_reuse_too() -> None:
    """from_library: the runtime's in-process entry takes part as a server does."""
    import jax
    import jax.numpy as jnp

    import tesscpp.jax

    jax.config.update("jax_enable_x64", True)
    with tesscpp.Tesseract.from_library(fixture_library("kept")) as local:
        keep_refer_release(local)

        # The bridges' steps: one solve each.
        x = torch.tensor(X, requires_grad=True)
        outputs = apply_tesseract(local, {"x": x})
        (outputs["y"] * torch.tensor(W)).sum().backward()
        assert solves_so_far(local) == int(outputs["solves"])
        np.testing.assert_allclose(x.grad.numpy(), expected_vjp(X, W))

        def loss(x):
            outputs = tesscpp.jax.apply_tesseract(local, {"x": x})
            return jnp.sum(outputs["y"] * W), outputs["solves"]

        (_, solves), grad = jax.jit(jax.value_and_grad(loss, has_aux=True))(jnp.asarray(X))
        assert solves_so_far(local) == int(solves)
        np.testing.assert_allclose(np.asarray(grad), expected_vjp(X, W))


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
def test_a_jax_training_step_solves_once(kept: tesscpp.Tesseract, jit: bool, monkeypatch) -> None:
    import jax
    import jax.numpy as jnp

    import tesscpp.jax
    from tesscpp.jax import _lowering

    jax.config.update("jax_enable_x64", True)

    def make_step():
        def loss(x):
            outputs = tesscpp.jax.apply_tesseract(kept, {"x": x})
            return jnp.sum(outputs["y"] * W), outputs["solves"]

        step = jax.value_and_grad(loss, has_aux=True)
        return jax.jit(step) if jit else step

    step = make_step()
    for _ in range(3):
        (_, solves), grad = step(jnp.asarray(X))
        # The backward solved nothing: the next apply is the next solve.
        assert solves_so_far(kept) == int(solves)
        np.testing.assert_allclose(np.asarray(grad), expected_vjp(X, W))
    # Another point at the same call site: its own forward, reused as well.
    other = np.array([0.5, -1.0, 2.0])
    (_, solves), grad = step(jnp.asarray(other))
    assert solves_so_far(kept) == int(solves)
    np.testing.assert_allclose(np.asarray(grad), expected_vjp(other, W))

    # The same step without reuse: the backward solves again.
    monkeypatch.setattr(_lowering, "reuses", lambda tesseract: False)
    step = make_step()
    (_, solves), grad = step(jnp.asarray(X))
    assert solves_so_far(kept) == int(solves) + 1
    np.testing.assert_allclose(np.asarray(grad), expected_vjp(X, W))


def test_peers_see_no_difference(kept: tesscpp.Tesseract) -> None:
    # tesseract-core's SDK against a server with the extension on.
    sdk = tesseract_core.Tesseract.from_url(kept.url)
    ours = kept.vector_jacobian_product({"x": X}, ["x"], ["y"], {"y": W})
    theirs = sdk.vector_jacobian_product({"x": X}, ["x"], ["y"], {"y": W})
    np.testing.assert_array_equal(np.asarray(theirs["x"]), ours["x"])
    # tesscpp's client against tesseract-runtime serving the module that uses
    # tesscpp.reuse: nothing is kept, steps work, every backward solves again.
    with tesscpp.Tesseract.from_source(
        fixture_api("kept"), python_executable=sys.executable, python_runtime="tesseract-runtime"
    ) as peer:
        keep = tesscpp.ForwardReuse(keep=True)
        peer.apply({"x": X}, reuse=keep)
        assert keep.residuals == ""
        x = torch.tensor(X, requires_grad=True)
        outputs = apply_tesseract(peer, {"x": x})
        (outputs["y"] * torch.tensor(W)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), expected_vjp(X, W))
        assert solves_so_far(peer) == int(outputs["solves"]) + 1


@pytest.mark.parametrize("runtime", ["tesscpp", "tesseract-runtime"])
def test_tesseract_cores_own_jax_cache_works_under_either_server(runtime: str, monkeypatch) -> None:
    """A module on tesseract-core's JAX recipe with its VJP cache on, stepped
    by tesseract-jax through tesseract-core's client: under tesscpp as under
    tesseract-runtime, the VJP reuses the apply's forward (and solves again
    with the cache off, which shows the count can tell)."""
    import jax
    import jax.numpy as jnp
    import tesseract_jax

    jax.config.update("jax_enable_x64", True)
    for cache, backward_solves in (("1", 0), ("0", 1)):
        monkeypatch.setenv("RECIPE_CACHE", cache)
        with tesscpp.Tesseract.from_source(
            fixture_api("recipe_cache"), python_executable=sys.executable, python_runtime=runtime
        ) as served:
            client = tesseract_core.Tesseract.from_url(served.url)

            def loss(x, client=client):
                outputs = tesseract_jax.apply_tesseract(client, {"x": x})
                return jnp.sum(outputs["y"] * W), outputs["solves"]

            step = jax.jit(jax.value_and_grad(loss, has_aux=True))
            for _ in range(2):
                (_, solves), grad = step(jnp.asarray(X))
                assert solves_so_far(served) - int(solves) == backward_solves, f"cache {cache}"
                np.testing.assert_allclose(np.asarray(grad), expected_vjp(X, W))


def test_kept_state_is_counted_from_the_arrays_it_holds() -> None:
    import jax.numpy as jnp

    from tesscpp import reuse

    x = jnp.arange(1000.0)
    assert not reuse.keep_requested()
    assert reuse.jax_apply(jnp.sin, x).shape == (1000,)  # nobody asked: nothing kept
    with reuse._scope(True, None) as slot:
        assert reuse.keep_requested()
        reuse.jax_apply(lambda v: jnp.sin(v) * v, x)
    assert slot is not None and callable(slot.state)
    assert slot.host_bytes >= x.nbytes  # the pullback holds at least cos(x) and x
    assert slot.device_bytes == 0
    with reuse._scope(False, slot.state):
        assert reuse.jax_pullback(jnp.sin, x) is slot.state
    with reuse._scope(True, None) as slot:
        reuse.keep({"a": np.zeros(10), "b": [np.zeros(5, np.float32)]})
    assert slot is not None and slot.host_bytes == 80 + 20


def test_a_torch_pullback_is_counted_with_what_its_graph_saved() -> None:
    """torch.func.vjp's pullback holds its graph's saved tensors out of sight
    of its closure (the estimate once saw 5 KB of a 10 MB kept state); each
    storage counted once."""
    import torch

    from tesscpp import reuse

    def steps(u: torch.Tensor) -> torch.Tensor:
        for _ in range(20):
            u = u * torch.roll(u, 1)  # saves u and its roll, 2 x 8 KB a step
        return u

    u = torch.rand(1000, dtype=torch.float64)
    with reuse._scope(True, None) as slot:
        reuse.torch_apply(steps, u)
    assert slot is not None and callable(slot.state)
    assert 40 * u.nbytes <= slot.host_bytes <= 44 * u.nbytes
    assert slot.device_bytes == 0


def test_a_torch_training_loop_holds_one_steps_forward_on_the_server() -> None:
    """The bridge frees a step's kept forward once its backward used it: a
    loop lets go of a step's outputs only as its next apply returns, which
    held two steps' state on the server when freeing waited for that."""
    with tesscpp.Tesseract.from_source(fixture_library("kept")) as served:
        outputs = None
        for step in range(4):
            x = torch.tensor(X + step, requires_grad=True)
            outputs = apply_tesseract(served, {"x": x})
            assert metric_values(served)["tesscpp_residual_entries"] == 1, f"step {step}"
            (outputs["y"] * torch.tensor(W)).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), expected_vjp(X + step, W))
        metrics = metric_values(served)
    assert metrics['tesscpp_residual_lookups_total{outcome="hit"}'] == 4
    del outputs


def test_a_step_stays_on_its_worker_with_eight_threads_on_four_workers() -> None:
    """Each worker keeps its own store; the client sends a step's derivative
    call on the connection its apply went on, so it reaches the worker that
    holds the state."""
    from concurrent.futures import ThreadPoolExecutor

    steps = 25
    with tesscpp.Tesseract.from_source(fixture_library("kept"), runtime_config={"num_workers": 4}) as served:

        def train(thread: int) -> None:
            for step in range(steps):
                x = torch.tensor(X + thread + step / steps, requires_grad=True)
                outputs = apply_tesseract(served, {"x": x})
                (outputs["y"] * torch.tensor(W)).sum().backward()
                np.testing.assert_allclose(x.grad.numpy(), expected_vjp(X + thread + step / steps, W))

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(train, range(8)))
        metrics = metric_values(served)
    hits = metrics['tesscpp_residual_lookups_total{outcome="hit"}']
    misses = metrics['tesscpp_residual_lookups_total{outcome="miss"}']
    assert hits + misses == 8 * steps
    assert hits / (hits + misses) >= 0.99, (hits, misses)
    # Each backward freed its step's state on the worker that held it (a
    # release sent with some later call went to whichever worker that was).
    assert metrics["tesscpp_residual_entries"] == 0


def _workers(server: subprocess.Popen) -> set[int]:
    return {int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()}


def test_residual_counters_never_step_back_when_a_worker_is_replaced(tmp_path) -> None:
    """Each worker counts in its own slot; the worker that replaces a crashed
    one starts again at zero, and what its predecessor counted stays in the
    sums (a Prometheus counter never decreases)."""
    with open(tmp_path / "stderr", "wb") as err:
        server = subprocess.Popen(
            [required_dir("TESSCPP_CLI"), "serve", str(fixture_library("kept")), "--port", "0",
             "--num-workers", "1", "--output-path", str(tmp_path)],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip
    try:
        port = int(server.stdout.readline().rsplit(":", 1)[1])
        served = tesscpp.Tesseract.from_url(f"http://127.0.0.1:{port}")

        def keep_one() -> None:
            reuse = tesscpp.ForwardReuse(keep=True)
            served.apply({"x": X}, reuse=reuse)
            assert reuse.residuals

        for _ in range(3):
            keep_one()
        assert metric_values(served)["tesscpp_residual_kept_total"] == 3
        (crashed,) = _workers(server)
        os.kill(crashed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not (_workers(server) - {crashed}):
            assert time.monotonic() < deadline, "no worker replaced the one killed"
            time.sleep(0.05)
        keep_one()
        metrics = metric_values(served)
        assert metrics["tesscpp_residual_kept_total"] == 4
        assert metrics["tesscpp_residual_entries"] == 1  # a gauge: the new worker's store alone
    finally:
        server.terminate()
        server.wait(timeout=30)
