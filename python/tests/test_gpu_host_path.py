"""CUDA tensors through the host path: without a GPU transport every CUDA
tensor is copied to the host, a differentiable output comes back as a CPU tensor, and gradients and tangents
land on the device of their own input or output.

Needs a CUDA device (skipped without one) and nothing but torch and the built
tesscpp package, so it runs on a GPU machine with
`pytest --noconftest python/tests/test_gpu_host_path.py`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as fwAD

import tesscpp
from tesscpp.torch import apply_tesseract

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

F64 = torch.float64


def library(name: str) -> Path:
    return Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / f"lib{name}.so"


@pytest.fixture(scope="module", params=["in-process", "served"])
def tesseracts(request):
    """name -> Tesseract, for vec and nl, made the way the parameter says."""
    if request.param == "served":
        served = {name: tesscpp.Tesseract.from_source(library(name)) for name in ("vec", "nl")}
        for t in served.values():
            t.serve()
        yield served
        for t in served.values():
            t.teardown()
        return
    yield {name: tesscpp.Tesseract.from_library(library(name)) for name in ("vec", "nl")}


def test_cuda_backward_on_the_host_path(tesseracts):
    a = torch.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = apply_tesseract(tesseracts["vec"], {"a": a, "b": np.array([4, 5, 6], np.float32)})
    assert out["c"].device.type == "cpu"
    assert torch.equal(out["c"].detach(), torch.tensor([5.0, 7.0, 9.0]))
    out["c"].sum().backward()
    assert a.grad.device.type == "cuda" and torch.equal(a.grad.cpu(), torch.ones(3))


@pytest.mark.parametrize("gpu_transport", [None, "none"])
def test_transport_argument_with_cuda_tensors(tesseracts, gpu_transport):
    a = torch.arange(5.0, device="cuda")
    out = apply_tesseract(tesseracts["vec"], {"a": a, "b": np.ones(5, np.float32)}, gpu_transport=gpu_transport)
    assert torch.equal(out["c"], torch.arange(5.0) + 1)


def test_mixed_devices_get_gradients_on_their_own_device(tesseracts):
    a_values, b_values = [1.0, 2.0, 3.0], [0.5, -1.0, 2.0]
    a = torch.tensor(a_values, dtype=F64, device="cuda", requires_grad=True)
    b = torch.tensor(b_values, dtype=F64, requires_grad=True)
    out = apply_tesseract(tesseracts["nl"], {"a": a, "b": b})
    out["y"].sum().backward()
    a_cpu, b_cpu = torch.tensor(a_values, dtype=F64), torch.tensor(b_values, dtype=F64)
    assert torch.allclose(out["y"].detach(), a_cpu**3 + b_cpu * a_cpu)
    assert a.grad.device.type == "cuda" and torch.allclose(a.grad.cpu(), 3 * a_cpu**2 + b_cpu)
    assert b.grad.device.type == "cpu" and torch.allclose(b.grad, a_cpu)


def test_forward_mode_tangent_lives_on_the_output_device(tesseracts):
    with fwAD.dual_level():
        a = fwAD.make_dual(
            torch.tensor([1.0, 2.0, 3.0], dtype=F64, device="cuda"), torch.ones(3, dtype=F64, device="cuda")
        )
        out = apply_tesseract(tesseracts["nl"], {"a": a, "b": torch.zeros(3, dtype=F64)})
        primal, tangent = fwAD.unpack_dual(out["y"])
    assert primal.device.type == tangent.device.type == "cpu"
    assert torch.allclose(tangent, 3 * torch.tensor([1.0, 2.0, 3.0], dtype=F64) ** 2)


def test_cuda_arrays_given_to_tesseract_apply_are_copied_to_the_host(tesseracts):
    out = tesseracts["vec"].apply({"a": torch.ones(4, device="cuda"), "b": torch.ones(4, device="cuda")})
    assert isinstance(out["c"], np.ndarray) and np.array_equal(out["c"], np.full(4, 2.0, np.float32))
