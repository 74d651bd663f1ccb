"""apply_tesseract under torch.vmap (vmap_method) and with batched
(co)tangents, on every backend, compared with tesseract-torch 0.2.0 where it
has the feature (see conftest.py); "parallel" and vectorised jacobians, which
it lacks, are compared with what it computes the slow way."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import tesseract_torch
import torch
import torch.autograd.forward_ad as fwAD

import tesscpp
import tesscpp.torch
from conftest import BACKENDS, Recorder, fixture_library

F64 = torch.float64
METHODS = ("sequential", "expand_dims", "broadcast_all")

X = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0], [2.0, 2.0, 2.0], [-3.0, 1.0, 0.25]]
W = [2.0, -1.0, 0.5]


def batched_call(apply: Any, t: Any, method: str | None) -> Any:
    """f(x) = apply on batch element x with w unbatched, for torch.vmap."""

    def f(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any]:
        out = apply(t, {"x": x, "w": w}, vmap_method=method)
        return out["y"], out["magnitude"], out["rank"]

    return f


@pytest.mark.parametrize("method", METHODS)
def test_forward_values_and_output_kinds(bridge, method):
    def body(apply, t):
        x, w = torch.tensor(X, dtype=F64), torch.tensor(W, dtype=F64)
        y, magnitude, rank = torch.vmap(batched_call(apply, t, method), in_dims=(0, None), out_dims=(0, 0, None))(x, w)
        assert torch.equal(y, x * w) and torch.equal(magnitude, (x * w).abs())
        # A non-array output is returned once: a batched call sees rank 2.
        assert rank == (1 if method == "sequential" else 2)
        calls = [c[0] for c in t.calls]
        assert calls == (["apply"] * 4 if method == "sequential" else ["apply"])
        return {"y": y, "magnitude": magnitude, "rank": rank, "calls": calls}

    bridge.compare("batch", body)


@pytest.mark.parametrize("method", METHODS)
def test_reverse_mode_through_vmap(bridge, method):
    def body(apply, t):
        x = torch.tensor(X, dtype=F64, requires_grad=True)
        w = torch.tensor(W, dtype=F64, requires_grad=True)
        y, _, _ = torch.vmap(batched_call(apply, t, method), in_dims=(0, None), out_dims=(0, 0, None))(x, w)
        (y * torch.arange(1.0, 4.0, dtype=F64)).sum().backward()
        weights = torch.arange(1.0, 4.0, dtype=F64)
        assert torch.allclose(x.grad, (w * weights).detach().expand(4, 3))
        assert torch.allclose(w.grad, (x * weights).detach().sum(0))
        return {"x": x.grad, "w": w.grad, "calls": t.gradient_calls()}

    bridge.compare("batch", body)


@pytest.mark.parametrize("method", METHODS)
def test_forward_mode_under_vmap(bridge, method):
    def body(apply, t):
        x, w = torch.tensor(X, dtype=F64), torch.tensor(W, dtype=F64)
        tangent = torch.ones(4, 3, dtype=F64)
        with fwAD.dual_level():
            y, _, _ = torch.vmap(batched_call(apply, t, method), in_dims=(0, None), out_dims=(0, 0, None))(
                fwAD.make_dual(x, tangent), w
            )
            primal, y_tangent = fwAD.unpack_dual(y)
        assert torch.equal(primal, x * w) and torch.allclose(y_tangent, tangent * w)
        return {"primal": primal, "tangent": y_tangent}

    bridge.compare("batch", body)


def test_a_batched_tensor_needs_a_method(bridge):
    def body(apply, t):
        x, w = torch.tensor(X, dtype=F64), torch.tensor(W, dtype=F64)
        with pytest.raises(NotImplementedError) as excinfo:
            torch.vmap(batched_call(apply, t, None), in_dims=(0, None), out_dims=(0, 0, None))(x, w)
        assert t.calls == []
        return str(excinfo.value).split(" (one of")[0]

    bridge.compare("batch", body)


def test_an_empty_batch_is_refused_per_element(bridge):
    def body(apply, t):
        with pytest.raises(ValueError, match="cannot batch over an empty batch") as excinfo:
            torch.vmap(batched_call(apply, t, "sequential"), in_dims=(0, None), out_dims=(0, 0, None))(
                torch.zeros(0, 3, dtype=F64), torch.tensor(W, dtype=F64)
            )
        return str(excinfo.value)

    bridge.compare("batch", body)


def test_an_unknown_method_is_refused_before_any_call(bridge):
    def body(apply, t):
        with pytest.raises(ValueError, match="Unsupported vmap_method 'loop'"):
            apply(t, {"x": torch.ones(3, dtype=F64), "w": torch.ones(3, dtype=F64)}, vmap_method="loop")
        return t.calls

    bridge.compare("batch", body)


# -- "parallel": tesseract-torch has no such method; it must equal "sequential"


@pytest.fixture(params=BACKENDS)
def pair(request, backends):
    return backends.pair(request.param, "batch")


def test_parallel_equals_sequential_in_every_mode(pair):
    ours, theirs = pair
    for tesseract in (ours, theirs):
        results = {}
        for method in ("sequential", "parallel"):
            t = Recorder(tesseract)
            x = torch.tensor(X, dtype=F64, requires_grad=True)
            w = torch.tensor(W, dtype=F64, requires_grad=True)
            y, magnitude, rank = torch.vmap(
                batched_call(tesscpp.torch.apply_tesseract, t, method), in_dims=(0, None), out_dims=(0, 0, None)
            )(x, w)
            (y * y).sum().backward()
            with fwAD.dual_level():
                yd, _, _ = torch.vmap(
                    batched_call(tesscpp.torch.apply_tesseract, t, method), in_dims=(0, None), out_dims=(0, 0, None)
                )(fwAD.make_dual(x.detach(), torch.ones(4, 3, dtype=F64)), w.detach())
                tangent = fwAD.unpack_dual(yd).tangent
            results[method] = (y.detach(), magnitude, rank, x.grad, w.grad, tangent, sorted(map(str, t.calls)))
        for a, b in zip(results["sequential"], results["parallel"], strict=True):
            if isinstance(a, torch.Tensor):
                assert torch.equal(a, b)
            else:
                assert a == b
        assert [c for c in results["parallel"][-1] if "apply" in c] == ["('apply',)"] * 8


def test_parallel_spreads_a_batch_over_the_server_workers():
    """The per-element calls of one batch run at once on a server with four
    workers: at least two naps were under way at one instant."""
    with tesscpp.Tesseract.from_source(fixture_library("nap"), runtime_config={"num_workers": 4}) as tesseract:
        answers: list[dict] = []

        class Keep(Recorder):
            def apply(self, inputs: dict, run_id: str | None = None) -> dict:
                answer = super().apply(inputs)
                answers.append(answer)
                return answer

        x = torch.ones(4, 2, dtype=F64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # began/ended differ per element: element 0's is returned
            y = torch.vmap(
                lambda row: tesscpp.torch.apply_tesseract(
                    Keep(tesseract), {"x": row, "seconds": 0.3}, vmap_method="parallel"
                )["y"]
            )(x)
        y.sum().backward()
        assert torch.equal(x.grad, torch.ones(4, 2, dtype=F64))
        naps = [(float(a["began"]), float(a["ended"])) for a in answers]
        assert len(naps) == 4
        peak = max(sum(b <= began < e for b, e in naps) for began, _ in naps)
        assert peak >= 2, naps


# -- batched (co)tangents: torch.autograd.functional.jacobian(vectorize=True)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorised_jacobian_equals_the_plain_one(pair, strategy):
    for tesseract in pair:
        t = Recorder(tesseract)
        x = torch.tensor(X[0], dtype=F64)
        w = torch.tensor(W, dtype=F64)

        def f(x: torch.Tensor, w: torch.Tensor, t: Recorder = t) -> torch.Tensor:
            return tesscpp.torch.apply_tesseract(t, {"x": x, "w": w})["y"]

        plain = torch.autograd.functional.jacobian(f, (x, w))
        vectorised = torch.autograd.functional.jacobian(f, (x, w), vectorize=True, strategy=strategy)
        for a, b in zip(plain, vectorised, strict=True):
            assert torch.equal(a, b)
        assert torch.equal(vectorised[0], torch.diag(w)) and torch.equal(vectorised[1], torch.diag(x))
        kind = "vjp" if strategy == "reverse-mode" else "jvp"
        assert sum(c[0] == kind for c in t.calls) >= 3


def test_grads_batched_cotangents_give_the_rows_of_the_jacobian(pair):
    """torch.autograd.grad(..., is_grads_batched=True): each row of an identity
    batch of cotangents is one VJP, together the Jacobian's rows."""
    for tesseract in pair:
        t = Recorder(tesseract)
        x = torch.tensor(X[0], dtype=F64, requires_grad=True)
        w = torch.tensor(W, dtype=F64)
        y = tesscpp.torch.apply_tesseract(t, {"x": x, "w": w})["y"]
        eye = torch.eye(y.numel(), dtype=F64)
        (rows,) = torch.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)
        assert torch.equal(rows, torch.diag(w)), rows
        assert sum(c[0] == "vjp" for c in t.calls) == y.numel()


def test_tesseract_torch_refuses_the_vectorised_jacobian(pair):
    _, theirs = pair

    def f(x: torch.Tensor) -> torch.Tensor:
        return tesseract_torch.apply_tesseract(theirs, {"x": x, "w": torch.tensor(W, dtype=F64)})["y"]

    with pytest.raises(RuntimeError):
        torch.autograd.functional.jacobian(f, torch.tensor(X[0], dtype=F64), vectorize=True)


def test_the_legacy_batching_hooks_exist_in_this_torch():
    """The batched (co)tangent path reads torch's legacy vmap through private
    hooks; this fails first if a torch release removes them."""
    assert hasattr(torch._C._functorch, "is_legacy_batchedtensor")
    assert callable(torch._remove_batch_dim) and callable(torch._add_batch_dim)
