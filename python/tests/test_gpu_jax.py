"""tesscpp.jax on a CUDA device (docs/jax-bridge.md, "On a CUDA device").

Under jit the custom call gets XLA's device buffers and stream: with a
cuda_ipc Tesseract the arrays go by IPC handle both ways (the transport
counters move, nothing is staged), ordered against XLA's stream on the GPU;
with a transport of "none" they go through the host, with the same results.
Eager calls (jax.grad without jit) take the DLPack path of the Python client.

Needs JAX with a CUDA backend and tesscpp built with CUDA and JAX's FFI
headers (skipped otherwise). Runs with scripts/gpu/build_and_test.sh, which
sets XLA_PYTHON_CLIENT_PREALLOCATE=false (the servers need device memory too).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import tesscpp  # noqa: E402
import tesscpp.jax  # noqa: E402
from leaks import leak_bound  # noqa: E402
from tesscpp.jax import apply_tesseract  # noqa: E402


def _cuda_jax() -> bool:
    try:
        return any(d.platform == "gpu" for d in jax.devices())
    except RuntimeError:
        return False


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _cuda_jax(), reason="needs JAX with a CUDA device"),
    pytest.mark.skipif(_cuda_jax() and not tesscpp.jax.ffi_available("cuda"), reason="XLA refused the custom call"),
]

SOURCE = Path(os.environ.get("TESSCPP_SOURCE_DIR", Path(__file__).resolve().parents[2]))

try:
    import tesseract_core
except ImportError:
    tesseract_core = None


def _fixture(name: str, form: str) -> Path:
    if form == "cpp":
        return Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / f"lib{name}.so"
    if tesseract_core is None:
        pytest.skip("Python modules need tesseract-core 1.15")
    return SOURCE / "python" / "tests" / "fixtures" / name / "tesseract_api.py"


def _serve(name: str, form: str, transport: str, **kwargs) -> tesscpp.Tesseract:
    t = tesscpp.Tesseract.from_source(_fixture(name, form), gpu_transport=transport, **kwargs)
    t.serve()
    return t


def _counters() -> dict[str, int]:
    import tesscpp.cuda

    return tesscpp.cuda.transport_counters()


def _exports(before: dict[str, int], after: dict[str, int]) -> tuple[int, int]:
    """Arrays sent by handle (legacy or VMM) and arrays staged, between two
    readings. A value_and_grad step exports 3: a for the apply, a and the
    cotangent for the VJP."""
    by_handle = sum(after[k] - before[k] for k in ("legacy_exports", "vmm_exports"))
    print("transport counters moved:", {k: after[k] - before[k] for k in after if after[k] != before[k]})
    return by_handle, after["staged_exports"] - before["staged_exports"]


# Measured on the H100 and the H200 (bench/results/gpu-tests-20261206-h200.log):
# of a step's three arrays two go by reference (cuda_vmm) and one is staged,
# every time: XLA made its allocation without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
# so no process can open it (docs/jax-bridge.md §3).
KNOWN_STAGED = 1


def _expect_by_handle(handles: int, staged: int, exports: int = 3) -> None:
    """Every array of a step exported, as measured: none staged passes (the gap
    closed), exactly KNOWN_STAGED is the known gap (an expected failure, after
    the values and gradients were checked), anything more fails."""
    assert handles + staged == exports, (handles, staged)
    assert staged <= KNOWN_STAGED, f"{staged} of {exports} of XLA's buffers were staged; {KNOWN_STAGED} was measured"
    if staged == KNOWN_STAGED:
        pytest.xfail(f"{staged} of {exports} of XLA's buffers staged (VMM without an FD handle), as measured")


def _loss(t, w):
    return lambda a: jnp.sum(apply_tesseract(t, {"a": a})["c"] * w)


def _inputs(n: int = 1000):
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    ka, kw = jax.random.split(jax.random.key(0))
    a, w = jax.random.normal(ka, (n,), jnp.float32), jax.random.normal(kw, (n,), jnp.float32)
    return jax.device_put(a, gpu), jax.device_put(w, gpu), gpu


@pytest.fixture(scope="module", params=["cpp", "py"], ids=["devid.so", "devid.py"])
def devid(request):
    t = _serve("devid", request.param, "cuda_ipc")
    yield t
    t.teardown()


def test_jitted_calls_pass_device_arrays_by_handle(devid):
    """value_and_grad under jit: an apply and a VJP through the custom call,
    the argument and the cotangent exported by handle, none staged; values and
    the gradient exact and on the input's device."""
    a, w, gpu = _inputs()
    step = jax.jit(jax.value_and_grad(_loss(devid, w)))
    step(a)  # compiled, transport checked, mappings opened
    calls, before = tesscpp.jax.ffi_calls(), _counters()
    value, grad = step(a)
    grad.block_until_ready()
    assert tesscpp.jax.ffi_calls() - calls == 2
    handles, staged = _exports(before, _counters())
    assert grad.devices() == {gpu} and np.array_equal(np.asarray(grad), np.asarray(w))
    assert np.isclose(float(value), float(jnp.sum(a * w)), rtol=1e-5)
    primal, tangent = jax.jit(lambda x, dx: jax.jvp(lambda v: apply_tesseract(devid, {"a": v})["c"], (x,), (dx,)))(a, w)
    assert np.array_equal(np.asarray(primal), np.asarray(a)) and np.array_equal(np.asarray(tangent), np.asarray(w))
    _expect_by_handle(handles, staged)


def test_the_host_path_gives_the_same_results(devid):
    """gpu_transport="none": the custom call copies the arguments to the host
    on XLA's stream and the results back; nothing is exported, and the
    results equal the by-handle path's."""
    a, w, gpu = _inputs()
    results = {}
    for transport in ("none", "cuda_ipc"):

        def loss(x, transport=transport):
            return jnp.sum(apply_tesseract(devid, {"a": x}, gpu_transport=transport)["c"] * w)

        step = jax.jit(jax.value_and_grad(loss))
        step(a)
        before = _counters()
        value, grad = step(a)
        grad.block_until_ready()
        results[transport] = (float(value), np.asarray(grad), grad.devices(), _exports(before, _counters()))
    assert results["none"][3] == (0, 0)
    assert results["none"][0] == results["cuda_ipc"][0]
    assert np.array_equal(results["none"][1], results["cuda_ipc"][1])
    assert results["none"][2] == results["cuda_ipc"][2] == {gpu}
    _expect_by_handle(*results["cuda_ipc"][3])


def test_host_only_components_answer_into_device_buffers():
    """vec takes host arrays only: CUDA arguments go by handle, the server
    copies them to its host, and its host answers are copied into XLA's
    device buffers."""
    t = _serve("vec", "cpp", "cuda_ipc")
    try:
        a, w, _ = _inputs()
        b = jnp.full_like(a, 0.5)
        f = jax.jit(jax.value_and_grad(lambda x: jnp.sum(apply_tesseract(t, {"a": x, "b": b})["c"] * w)))
        value, grad = f(a)
        assert np.isclose(float(value), float(jnp.sum((a + b) * w)), rtol=1e-5)
        assert np.array_equal(np.asarray(grad), np.asarray(w))
    finally:
        t.teardown()


@pytest.mark.parametrize("method", ["sequential", "parallel"])
def test_vmap_on_the_device(devid, method):
    """jax.vmap of a jitted gradient (devid takes 1-D arrays: the methods that
    send one call per element): exact gradients on the device; "parallel"
    sends the batch's calls at once."""
    gpu = _inputs()[2]
    rows = jax.device_put(jnp.arange(8 * 100, dtype=jnp.float32).reshape(8, 100), gpu)
    weights = jax.device_put(jnp.linspace(-1, 1, 8 * 100, dtype=jnp.float32).reshape(8, 100), gpu)

    def row_loss(row, w):
        return jnp.sum(apply_tesseract(devid, {"a": row}, vmap_method=method)["c"] * w)

    grads = jax.jit(jax.vmap(jax.grad(row_loss)))(rows, weights)
    assert grads.devices() == {gpu} and np.array_equal(np.asarray(grads), np.asarray(weights))


def test_eager_gradients_by_dlpack(devid):
    """jax.grad without jit runs the primitive eagerly: the CUDA arrays go
    through DLPack and the client's cuda_ipc, and the gradient lands on the
    input's device."""
    a, w, gpu = _inputs()
    jax.grad(_loss(devid, w))(a)
    before = _counters()
    grad = jax.grad(_loss(devid, w))(a)
    handles, staged = _exports(before, _counters())
    assert grad.devices() == {gpu} and np.array_equal(np.asarray(grad), np.asarray(w))
    _expect_by_handle(handles, staged)


@pytest.mark.skipif(tesseract_core is None, reason="needs tesseract-core 1.15")
def test_tesseract_runtime_server_by_handle():
    """tesseract-core's own runtime serving cuda_ipc, reached by tesscpp's
    client from the custom call. It takes legacy IPC handles only: arrays in
    XLA's VMM memory reach it through a staging buffer (H200: all three)."""
    t = _serve("devid", "py", "cuda_ipc", python_executable=sys.executable, python_runtime="tesseract-runtime")
    try:
        a, w, gpu = _inputs()
        step = jax.jit(jax.value_and_grad(_loss(t, w)))
        step(a)
        before = _counters()
        _, grad = step(a)
        grad.block_until_ready()
        handles, staged = _exports(before, _counters())
        assert handles + staged >= 3
        assert grad.devices() == {gpu} and np.array_equal(np.asarray(grad), np.asarray(w))
    finally:
        t.teardown()


def test_churn_keeps_device_memory_flat(devid):
    """10 000 jitted calls of five sizes: results stay exact and the device's
    free memory (every allocator in the process, XLA's included) does not fall."""
    torch = pytest.importorskip("torch")
    gpu = _inputs()[2]
    sizes = [1, 100, 4096, 65_536, 1 << 20]
    step = jax.jit(lambda x: apply_tesseract(devid, {"a": x})["c"])
    arrays = [jax.device_put(jnp.full((n,), float(n), jnp.float32), gpu) for n in sizes]
    for i in range(200):  # compile each size, warm the pools and the mapping cache
        step(arrays[i % 5]).block_until_ready()
    free_before, _ = torch.cuda.mem_get_info()
    for i in range(10_000):
        out = step(arrays[i % 5])
        if i % 97 == 0:
            assert np.array_equal(np.asarray(out), np.asarray(arrays[i % 5])), i
    out.block_until_ready()
    free_after, _ = torch.cuda.mem_get_info()
    growth = free_before - free_after
    print(f"jax churn: device memory in use grew by {growth / 2**20:.1f} MiB over 10000 calls")
    assert growth < leak_bound([4 * sizes[i % 5] for i in range(10_000)])
