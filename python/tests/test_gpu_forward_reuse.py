"""Forward reuse with device inputs (docs/forward-reuse.md §3a): a torch module
computing on the GPU (fixtures/devkept), served by tesscpp with cuda_ipc and
trained through tesscpp.torch with CUDA tensors.

A GPU transport's inputs are the client's memory, lent for one call, while
the pullback an apply keeps saves its inputs: a kept apply runs on the
server's own device copy, and calls compare their device inputs with the
apply's as host copies. Needs a CUDA device, tesscpp built with CUDA and
tesseract-core 1.15 (skipped otherwise); run by scripts/gpu/build_and_test.sh.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import tesscpp
from leaks import leak_bound
from served_metrics import metric_values
from tesscpp.torch import apply_tesseract

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]
tesseract_core = pytest.importorskip("tesseract_core", reason="Python modules on tesscpp's runtime need it")

SOURCE = Path(os.environ.get("TESSCPP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DEVKEPT_PY = SOURCE / "python" / "tests" / "fixtures" / "devkept" / "tesseract_api.py"


def served(**runtime_config) -> tesscpp.Tesseract:
    t = tesscpp.Tesseract.from_source(DEVKEPT_PY, gpu_transport="cuda_ipc", runtime_config=runtime_config or None)
    t.serve()
    return t


@pytest.fixture(scope="module")
def devkept():
    t = served()
    yield t
    t.teardown()


def expected_vjp(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    # y = x * s, s = sum(x^2): dy_i/dx_j = delta_ij s + 2 x_i x_j.
    return w * (x @ x) + 2 * x * (w @ x)


def on_device(value) -> torch.Tensor:
    out = torch.from_dlpack(value)
    assert out.device.type == "cuda"
    return out


def solves_so_far(t: tesscpp.Tesseract) -> int:
    """The server's solve count after one more (plain) apply, less that apply."""
    return int(t.apply({"x": torch.zeros(1, device="cuda")})["solves"]) - 1


def test_a_training_step_on_the_device_solves_once(devkept):
    """apply_tesseract's step: the apply keeps its pullback (CUDA tensors,
    counted against the device budget), the backward hits and solves nothing,
    and the gradient is on the device, bit for bit the one without reuse."""
    x = torch.randn(4096, device="cuda", requires_grad=True)
    w = torch.randn(4096, device="cuda")
    outputs = apply_tesseract(devkept, {"x": x})
    after_forward = int(outputs["solves"])
    held = metric_values(devkept)
    assert held["tesscpp_residual_entries"] >= 1
    assert held['tesscpp_residual_bytes{memory="device"}'] >= 4096 * 4
    (outputs["y"] * w).sum().backward()
    assert solves_so_far(devkept) == after_forward
    assert metric_values(devkept)['tesscpp_residual_lookups_total{outcome="hit"}'] >= 1
    assert x.grad.device.type == "cuda"
    plain = devkept.vector_jacobian_product({"x": x.detach()}, ["x"], ["y"], {"y": w})
    assert torch.equal(x.grad, on_device(plain["x"]))
    torch.testing.assert_close(x.grad, expected_vjp(x.detach(), w), rtol=1e-4, atol=1e-3)


def test_the_kept_state_never_holds_the_clients_memory(devkept):
    """The client overwrites the memory it lent the apply once the answer is
    back; a VJP at the apply's values (a fresh tensor) still hits and is right,
    so the kept pullback holds the server's copy. Other values recompute."""
    x = torch.randn(1 << 16, device="cuda")
    w = torch.randn(1 << 16, device="cuda")
    same = x.clone()
    keep = tesscpp.ForwardReuse(keep=True)
    devkept.apply({"x": x}, reuse=keep)
    assert keep.residuals
    x.fill_(float("nan"))
    del x
    torch.cuda.empty_cache()
    clobber = torch.full((1 << 22,), float("nan"), device="cuda")  # reuses freed blocks
    refer = tesscpp.ForwardReuse(residuals=keep.residuals)
    vjp = devkept.vector_jacobian_product({"x": same}, ["x"], ["y"], {"y": w}, reuse=refer)
    assert refer.used == "hit"
    torch.testing.assert_close(on_device(vjp["x"]), expected_vjp(same, w), rtol=1e-4, atol=1e-2)

    other = same.clone()
    other[7] += 1.0
    refer = tesscpp.ForwardReuse(residuals=keep.residuals)
    vjp = devkept.vector_jacobian_product({"x": other}, ["x"], ["y"], {"y": w}, reuse=refer)
    assert refer.used == "recomputed: inputs differ"
    torch.testing.assert_close(on_device(vjp["x"]), expected_vjp(other, w), rtol=1e-4, atol=1e-2)
    devkept.release_residuals(keep.residuals)
    del clobber


def test_device_state_past_the_device_budget_is_not_kept():
    """A device budget of 1 MiB: a 4 MiB input's pullback is not kept (the
    host budget would hold it), and the VJP recomputes the right answer."""
    t = served(residual_device_mb=1)
    try:
        x = torch.randn(1 << 20, device="cuda", requires_grad=True)
        w = torch.randn(1 << 20, device="cuda")
        (apply_tesseract(t, {"x": x})["y"] * w).sum().backward()
        metrics = metric_values(t)
        assert metrics['tesscpp_residual_dropped_total{reason="over_budget"}'] >= 1
        assert metrics['tesscpp_residual_bytes{memory="device"}'] == 0
        torch.testing.assert_close(x.grad, expected_vjp(x.detach(), w), rtol=1e-4, atol=1e-1)
    finally:
        t.teardown()


def test_ten_thousand_steps_on_the_device_keep_memory_flat(devkept):
    """10 000 train steps with CUDA tensors: every backward hits, each step's
    state is freed as its backward used it, and device memory (the server's
    included: mem_get_info sees the whole GPU) stays flat."""
    w = torch.ones(1 << 16, device="cuda")

    def step(i: int) -> torch.Tensor:
        n = 1 + (i * 37) % (1 << 16)
        x = torch.full((n,), 1.0 + (i % 7) / 8, device="cuda", requires_grad=True)
        (apply_tesseract(devkept, {"x": x})["y"] * w[:n]).sum().backward()
        return x

    for i in range(200):
        step(i)
    torch.cuda.synchronize()
    before = metric_values(devkept)
    free_before, _ = torch.cuda.mem_get_info()
    for i in range(10_000):
        x = step(i)
        if i % 101 == 0:
            torch.testing.assert_close(x.grad, expected_vjp(x.detach(), w[: x.numel()]), rtol=1e-4, atol=1e-1)
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    after = metric_values(devkept)
    hits = (
        after['tesscpp_residual_lookups_total{outcome="hit"}'] - before['tesscpp_residual_lookups_total{outcome="hit"}']
    )
    growth = free_before - free_after
    print(f"device churn: {hits:.0f} hits of 10000, device memory in use grew by {growth / 2**20:.1f} MiB")
    assert hits == 10_000
    assert after["tesscpp_residual_entries"] == 0
    assert growth < leak_bound([4 * (1 + (i * 37) % (1 << 16)) for i in range(10_000)])


def test_hessian_vector_products_on_the_device(devkept):
    """The module's HVP (tesscpp.derivatives.torch_hvp) with CUDA tangents and
    cotangents, and torch.autograd.functional.hvp through apply_tesseract on the
    device: torch's own answer, on the device."""
    x = torch.randn(4096, device="cuda", dtype=torch.float32)
    u, v = torch.randn_like(x), torch.randn_like(x)
    answer = on_device(devkept.hessian_vector_product({"x": x}, ["x"], ["y"], {"x": v}, {"y": u})["x"])
    _, want = torch.autograd.functional.hvp(lambda x: (u * x * (x @ x)).sum(), x, v)
    torch.testing.assert_close(answer, want, rtol=1e-4, atol=1e-2)
    _, through = torch.autograd.functional.hvp(lambda x: (u * apply_tesseract(devkept, {"x": x})["y"]).sum(), x, v)
    assert through.device.type == "cuda"
    torch.testing.assert_close(through, want, rtol=1e-4, atol=1e-2)

