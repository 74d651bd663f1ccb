"""Array-form derived derivatives on a CUDA device (docs/autodiff.md, "Array
form"): examples/burgers_array served with the cuda_ipc transport gets CUDA
tensors, runs the same source on Dr.Jit's CUDA backend and answers with CUDA
tensors, none of it staged through the host. Its results must equal those of
the same component called with host arrays (Dr.Jit's CPU backend, where an
LLVM is installed) or, failing that, of JAX on the CPU in float64.

Needs a CUDA device and tesscpp built with CUDA and Dr.Jit (skipped
otherwise); runs with scripts/gpu/build_and_test.sh.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import tesscpp
import tesscpp.cuda
from leaks import leak_bound

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

N = 4096


def _library() -> Path:
    path = Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / "libburgers_array.so"
    if not path.exists():
        pytest.skip("burgers_array was not built (no Dr.Jit)")
    return path


@pytest.fixture(scope="module")
def burgers():
    t = tesscpp.Tesseract.from_source(_library(), gpu_transport="cuda_ipc")
    t.serve()
    yield t
    t.teardown()


def _inputs(device: str) -> dict:
    rng = np.random.default_rng(5)
    u = np.sin(np.linspace(0, 2 * np.pi, N, endpoint=False)) + 0.3 * rng.standard_normal(N)
    return {"u": torch.tensor(u, dtype=torch.float64, device=device), "nu": 0.07, "dt": 1e-4, "dx": 1e-2, "steps": 4}


def _host(value) -> np.ndarray:
    return torch.from_dlpack(value).cpu().numpy() if hasattr(value, "__dlpack__") else np.asarray(value)


def _reference(
    inputs: dict, cotangent: np.ndarray, energy_cotangent: float = 0.0
) -> tuple[np.ndarray, float, np.ndarray, float]:
    """u_next, the energy, and the VJP for u and for nu with these cotangents
    of u_next and the energy, from JAX on the CPU in float64."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def outputs(u, nu):
        h, dx = inputs["dt"], inputs["dx"]
        for _ in range(inputs["steps"]):
            left, right = jnp.roll(u, 1), jnp.roll(u, -1)
            advection = jnp.where(u > 0, u * (u - left) / dx, u * (right - u) / dx)
            u = u - h * advection + h * nu * (right - 2 * u + left) / (dx * dx)
        return u, jnp.sum(0.5 * u * u * dx)

    cpu = jax.devices("cpu")[0]
    u0 = jax.device_put(jnp.asarray(inputs["u"].cpu().numpy()), cpu)
    (out, energy), pullback = jax.vjp(outputs, u0, jnp.float64(inputs["nu"]))
    du, dnu = pullback((jnp.asarray(cotangent), jnp.float64(energy_cotangent)))
    return np.asarray(out), float(energy), np.asarray(du), float(dnu)


def test_cuda_arrays_run_on_the_gpu_and_equal_the_reference(burgers):
    inputs = _inputs("cuda")
    cotangent = torch.tensor(np.random.default_rng(6).standard_normal(N), device="cuda")
    before = tesscpp.cuda.transport_counters()
    out = burgers.apply(inputs)
    vjp = burgers.vector_jacobian_product(inputs, ["u", "nu"], ["u_next"], {"u_next": cotangent})
    tangent = torch.ones(N, dtype=torch.float64, device="cuda")
    jvp = burgers.jacobian_vector_product(inputs, ["u"], ["u_next"], {"u": tangent})
    after = tesscpp.cuda.transport_counters()
    for value in (out["u_next"], vjp["u"], jvp["u_next"]):
        assert torch.from_dlpack(value).device.type == "cuda"  # answered on the device
    assert after["staged_exports"] == before["staged_exports"], "device arrays went through the host"
    want_u, _, want_du, want_dnu = _reference(inputs, cotangent.cpu().numpy())
    np.testing.assert_allclose(_host(out["u_next"]), want_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_host(vjp["u"]), want_du, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_host(vjp["nu"]), want_dnu, rtol=1e-10)
    # The JVP along ones against the VJP: <w, J t> = <J^T w, t>.
    lhs = float(np.dot(cotangent.cpu().numpy(), _host(jvp["u_next"])))
    np.testing.assert_allclose(lhs, float(np.sum(want_du)), rtol=1e-9)


def test_host_arrays_give_the_same_results(burgers):
    """The CPU backend (where this machine has an LLVM for Dr.Jit) on host
    arrays, against the CUDA backend on device arrays."""
    try:
        host = burgers.apply(_inputs("cpu"))
    except Exception as e:  # noqa: BLE001 - the message says why
        if "LLVM" in str(e):
            pytest.skip(f"Dr.Jit's CPU backend is not available here: {e}")
        raise
    device = burgers.apply(_inputs("cuda"))
    np.testing.assert_allclose(_host(device["u_next"]), _host(host["u_next"]), rtol=1e-13, atol=1e-13)


def test_churn_keeps_device_memory_flat(burgers):
    cotangent = torch.ones(N, dtype=torch.float64, device="cuda")
    inputs = _inputs("cuda")
    for _ in range(50):
        burgers.vector_jacobian_product(inputs, ["u"], ["u_next"], {"u_next": cotangent})
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    for i in range(2_000):
        vjp = burgers.vector_jacobian_product(inputs, ["u"], ["u_next"], {"u_next": cotangent})
        if i % 499 == 0:
            assert torch.isfinite(torch.from_dlpack(vjp["u"])).all()
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    growth = free_before - free_after
    print(f"array-form churn: device memory in use grew by {growth / 2**20:.1f} MiB over 2000 VJPs")
    assert growth < leak_bound([N * 8] * 2_000)  # a float64 answer of N per VJP


def test_replayed_calls_follow_their_inputs(burgers):
    """The first VJP of a key is recorded on the device, the next ones replay
    the recording (tesscpp/autodiff/detail/replay.h): each must equal JAX's VJP at its
    own point."""
    base = _inputs("cuda")
    rng = np.random.default_rng(7)
    for scale in (1.0, -0.5, 2.0):
        inputs = {**base, "u": base["u"] * scale, "nu": 0.07 * abs(scale)}
        cotangent = torch.tensor(rng.standard_normal(N), device="cuda")
        vjp = burgers.vector_jacobian_product(inputs, ["u", "nu"], ["u_next"], {"u_next": cotangent})
        _, _, want_du, want_dnu = _reference(inputs, cotangent.cpu().numpy())
        np.testing.assert_allclose(_host(vjp["u"]), want_du, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(_host(vjp["nu"]), want_dnu, rtol=1e-10)


def test_the_energy_and_host_scalars_on_the_gpu(burgers):
    """The energy (ctx.OutputSum: summed by apply, its tangent summed by the
    JVP, its cotangent spread by the VJP) on the CUDA backend, with nu and the
    energy's cotangent arriving as host scalars, which go to the device
    together in one copy; the VJP recorded, then replayed at new points."""
    base = _inputs("cuda")
    _, want_energy, _, _ = _reference(base, np.zeros(N))
    np.testing.assert_allclose(float(_host(burgers.apply(base)["energy"])), want_energy, rtol=1e-12)
    rng = np.random.default_rng(8)
    for scale in (1.0, -0.5, 2.0):
        inputs = {**base, "u": base["u"] * scale, "nu": 0.07 * abs(scale)}
        cotangent = torch.tensor(rng.standard_normal(N), device="cuda")
        weight = 0.5 + scale
        vjp = burgers.vector_jacobian_product(
            inputs, ["u", "nu"], ["u_next", "energy"], {"u_next": cotangent, "energy": weight}
        )
        _, _, want_du, want_dnu = _reference(inputs, cotangent.cpu().numpy(), weight)
        np.testing.assert_allclose(_host(vjp["u"]), want_du, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(_host(vjp["nu"]), want_dnu, rtol=1e-10)
    tangent = torch.tensor(rng.standard_normal(N), device="cuda")
    jvp = burgers.jacobian_vector_product(base, ["u"], ["energy"], {"u": tangent})
    _, _, energy_gradient, _ = _reference(base, np.zeros(N), 1.0)
    np.testing.assert_allclose(
        float(_host(jvp["energy"])), float(np.dot(energy_gradient, tangent.cpu().numpy())), rtol=1e-9
    )


def test_permute_on_the_gpu():
    """autodiff::Permute on the CUDA backend (python/tests/fixtures/permute_array:
    a reversal and a roll by `%` of index parameters, a third result unused):
    apply, JVP and VJP on CUDA tensors, recorded and then replayed, equal
    numpy's reversal and roll."""
    path = Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / "libpermute_array.so"
    if not path.exists():
        pytest.skip("permute_array was not built (no Dr.Jit)")
    t = tesscpp.Tesseract.from_source(path, gpu_transport="cuda_ipc")
    t.serve()
    try:
        rng = np.random.default_rng(9)
        for shift in (3, 3, -7):  # the second call replays the first's recording
            x, w, v = (rng.standard_normal(1001) for _ in range(3))
            inputs = {"x": torch.tensor(x, device="cuda"), "shift": shift}
            out = t.apply(inputs)
            np.testing.assert_allclose(_host(out["y"]), x[::-1] * x, rtol=1e-15)
            np.testing.assert_allclose(_host(out["z"]), np.roll(x, shift) ** 2, rtol=1e-15)
            cotangent = {"y": torch.tensor(w, device="cuda"), "z": torch.tensor(v, device="cuda")}
            vjp = t.vector_jacobian_product(inputs, ["x"], ["y", "z"], cotangent)
            want = w * x[::-1] + (w * x)[::-1] + 2 * x * np.roll(v, -shift)
            np.testing.assert_allclose(_host(vjp["x"]), want, rtol=1e-13, atol=1e-15)
            jvp = t.jacobian_vector_product(inputs, ["x"], ["y", "z"], {"x": cotangent["y"]})
            np.testing.assert_allclose(_host(jvp["y"]), w[::-1] * x + x[::-1] * w, rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(_host(jvp["z"]), 2 * np.roll(x, shift) * np.roll(w, shift), rtol=1e-13)
    finally:
        t.teardown()
