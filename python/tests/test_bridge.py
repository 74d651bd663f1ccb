"""The bridge's behaviour cases (docs/compatibility.md, "Torch bridge") that need no GPU, on every backend,
each compared with tesseract-torch 0.2.0 (see conftest.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tesseract_torch
import torch
import torch.autograd.forward_ad as fwAD

import tesscpp.torch
from conftest import BACKENDS

F32 = torch.float32
F64 = torch.float64


def vec_inputs(a=None, b=None):
    return {
        "a": torch.tensor([1.0, 2.0, 3.0]) if a is None else a,
        "b": np.array([4, 5, 6], np.float32) if b is None else b,
    }


def errors_type(excinfo: pytest.ExceptionInfo) -> str:
    return type(excinfo.value).__name__


# 1
def test_basic_forward(bridge):
    def body(apply, t):
        out = apply(t, vec_inputs())
        assert isinstance(out["c"], torch.Tensor) and out["c"].dtype == F32 and out["c"].device.type == "cpu"
        assert torch.equal(out["c"], torch.tensor([5.0, 7.0, 9.0]))
        return out

    bridge.compare("vec", body)


# 2, 3
def test_basic_backward_and_autograd_grad(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = apply(t, vec_inputs(a))
        assert out["c"].grad_fn is not None
        out["c"].sum().backward()
        assert torch.equal(a.grad, torch.ones(3))
        a2 = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (g,) = torch.autograd.grad(apply(t, vec_inputs(a2))["c"].sum(), a2)
        assert torch.equal(g, torch.ones(3))
        return {"c": out["c"], "grad": a.grad, "g": g, "calls": t.gradient_calls()}

    bridge.compare("vec", body)


# 4
def test_basic_forward_mode(bridge):
    def body(apply, t):
        with fwAD.dual_level():
            a = fwAD.make_dual(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
            out = apply(t, vec_inputs(a))
            primal, tangent = fwAD.unpack_dual(out["c"])
        assert torch.equal(tangent, torch.tensor([1.0, 0.0, 0.0]))
        return {"primal": primal, "tangent": tangent}

    bridge.compare("vec", body)


# 5
def test_input_kinds(bridge):
    def body(apply, t):
        all_numpy = apply(t, {"a": np.array([1, 2, 3], np.float32), "b": np.array([4, 5, 6], np.float32)})
        assert isinstance(all_numpy["c"], torch.Tensor) and all_numpy["c"].grad_fn is None
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
        all_torch = apply(t, {"a": a, "b": b})
        all_torch["c"].sum().backward()
        assert torch.equal(a.grad, torch.ones(3)) and b.grad is None
        listed = apply(t, {"a": torch.tensor([1.0, 2.0, 3.0]), "b": [4.0, 5.0, 6.0]})
        for out in (all_numpy, all_torch, listed):
            assert torch.equal(out["c"].detach(), torch.tensor([5.0, 7.0, 9.0]))
        return {"numpy": all_numpy, "torch": all_torch, "list": listed, "grad": a.grad}

    bridge.compare("vec", body)


# 6
def test_grad_mode_switches(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with torch.no_grad():
            no_grad = apply(t, vec_inputs(a))
        detached = apply(t, vec_inputs(a.detach()))
        plain = apply(t, vec_inputs(torch.tensor([1.0, 2.0, 3.0])))
        for out in (no_grad, detached, plain):
            assert out["c"].requires_grad is False and out["c"].grad_fn is None
            assert torch.equal(out["c"], torch.tensor([5.0, 7.0, 9.0]))
        return [no_grad, detached, plain]

    bridge.compare("vec", body)


# 7
def test_dtype_flow(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
        out = apply(t, {"a": a, "b": np.array([4, 5, 6], np.float64)})
        assert out["c"].dtype == F32 and torch.equal(out["c"], torch.tensor([5.0, 7.0, 9.0]))
        out["c"].sum().backward()
        assert a.grad.dtype == F64 and torch.allclose(a.grad, torch.ones(3, dtype=F64), atol=1e-6)
        return {"c": out["c"], "grad": a.grad}

    bridge.compare("vec", body)


# 8
def test_gradient_accumulation(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        for _ in range(2):
            apply(t, vec_inputs(a))["c"].sum().backward()
        twice = a.grad.clone()
        assert torch.equal(twice, 2 * torch.ones(3))
        a.grad.zero_()
        apply(t, vec_inputs(a))["c"].sum().backward()
        assert torch.equal(a.grad, torch.ones(3))
        return {"twice": twice, "once": a.grad}

    bridge.compare("vec", body)


# 9
def test_retain_graph(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = apply(t, vec_inputs(a))["c"].sum()
        loss.backward(retain_graph=True)
        first = a.grad.clone()
        a.grad = None
        loss.backward()
        assert torch.equal(first, a.grad)
        assert len(t.gradient_calls()) == 2
        return {"first": first, "second": a.grad, "calls": t.gradient_calls()}

    bridge.compare("vec", body)


# 10
def test_chaining(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = np.array([4, 5, 6], np.float32)
        r1 = apply(t, {"a": a, "b": b})
        r2 = apply(t, {"a": r1["c"], "b": b})
        r2["c"].sum().backward()
        assert torch.equal(a.grad, torch.ones(3))
        return {"r2": r2, "grad": a.grad}

    bridge.compare("vec", body)


def nest_inputs(a=None, v=None, include_a=True):
    scalars = {"b": 2.0}
    if include_a:
        scalars["a"] = torch.tensor(5.0) if a is None else a
    return {
        "scalars": scalars,
        "vectors": {"v": torch.tensor([1.0, 2.0, 3.0]) if v is None else v, "w": np.array([0, 1, 2], np.float32)},
        "other_stuff": {"s": "hello", "i": 42, "f": 3.14},
    }


# 11
def test_nested_forward_and_types(bridge):
    def body(apply, t):
        out = apply(t, nest_inputs())
        a, v = out["scalars"]["a"], out["vectors"]["v"]
        assert isinstance(a, torch.Tensor) and a.dim() == 0 and torch.equal(a, torch.tensor(52.0))
        assert isinstance(v, torch.Tensor) and torch.equal(v, torch.tensor([10.0, 21.0, 32.0]))
        b, w = out["scalars"]["b"], out["vectors"]["w"]
        assert not isinstance(b, torch.Tensor) and np.asarray(b) == 2.0
        assert not isinstance(w, torch.Tensor) and np.array_equal(w, [0, 1, 2])
        return out

    bridge.compare("nest", body)


# 12
def test_nested_multi_slot_both_modes(bridge):
    def body(apply, t):
        a = torch.tensor(5.0, requires_grad=True)
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        apply(t, nest_inputs(a, v))["scalars"]["a"].backward()
        assert torch.equal(a.grad, torch.tensor(10.0))
        with fwAD.dual_level():
            ad = fwAD.make_dual(torch.tensor(5.0), torch.tensor(1.0))
            vd = fwAD.make_dual(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0]))
            out = apply(t, nest_inputs(ad, vd))
            ta = fwAD.unpack_dual(out["scalars"]["a"]).tangent
            tv = fwAD.unpack_dual(out["vectors"]["v"]).tangent
        assert torch.equal(ta, torch.tensor(10.0)) and torch.equal(tv, torch.tensor([10.0, 0.0, 0.0]))
        return {"grad_a": a.grad, "ta": ta, "tv": tv}

    bridge.compare("nest", body)


# 13
def test_omitted_defaulted_slot(bridge):
    def body(apply, t):
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = apply(t, nest_inputs(v=v, include_a=False))
        a = out["scalars"]["a"]
        assert isinstance(a, torch.Tensor) and a.grad_fn is not None and torch.equal(a, torch.tensor(2.0))
        a.backward()
        assert torch.equal(v.grad, torch.zeros(3))
        assert t.gradient_calls() == [("vjp", ["vectors.v"], ["scalars.a"])]
        return {"a": a, "grad": v.grad, "calls": t.gradient_calls()}

    bridge.compare("nest", body)


# 14
def test_missing_vjp(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = apply(t, {"a": a})
        assert torch.equal(out["b"], 2 * a.detach())
        with pytest.raises(NotImplementedError, match="VJP") as excinfo:
            out["b"].sum().backward()
        # tesseract-core's words exactly, whichever stack raised them (code matches on them).
        assert str(excinfo.value) == "Vector Jacobian Product (VJP) not implemented for this Tesseract."
        return {"b": out["b"], "error": errors_type(excinfo)}

    bridge.compare("fwd", body)


# 15
def test_jvp_only_tesseract(bridge):
    def body(apply, t):
        with fwAD.dual_level():
            a = fwAD.make_dual(torch.tensor([1.0, 2.0, 3.0]), torch.ones(3))
            tangent = fwAD.unpack_dual(apply(t, {"a": a})["b"]).tangent
        assert torch.equal(tangent, 2 * torch.ones(3))
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with pytest.raises(NotImplementedError, match=r"Vector Jacobian Product \(VJP\) not implemented") as excinfo:
            apply(t, {"a": a})["b"].sum().backward()
        return {"tangent": tangent, "error": errors_type(excinfo)}

    bridge.compare("jvponly", body)


def test_missing_jvp_raises_from_the_call(bridge):
    def body(apply, t):
        with fwAD.dual_level():
            a = fwAD.make_dual(torch.tensor([1.0, 2.0, 3.0]), torch.ones(3))
            with pytest.raises(NotImplementedError, match="JVP") as excinfo:
                apply(t, {"a": a})
        assert str(excinfo.value) == "Jacobian Vector Product (JVP) not implemented for this Tesseract."
        return errors_type(excinfo)

    bridge.compare("fwd", body)


# 16
def test_derived_vjp_on_the_tesseract_side(bridge):
    def body(apply, t):
        x = torch.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
        apply(t, {"x": x})["y"].sum().backward()
        assert torch.equal(x.grad, torch.full((3,), 3.0, dtype=F64))
        return x.grad

    bridge.compare("derived", body)


# 17
@pytest.mark.parametrize("transform", ["vjp", "jvp", "grad"])
def test_torch_func_rejected(bridge, transform):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0])
        b = np.array([4, 5, 6], np.float32)

        def f(p):
            return apply(t, {"a": p, "b": b})["c"]

        with pytest.raises(RuntimeError, match=r"does not support torch\.func") as excinfo:
            if transform == "vjp":
                torch.func.vjp(f, a)
            elif transform == "jvp":
                torch.func.jvp(f, (a,), (torch.ones(3),))
            else:
                torch.func.grad(lambda p: f(p).sum())(a)
        message = str(excinfo.value)
        assert "torch.autograd.grad" in message and "torch.autograd.forward_ad" in message
        return errors_type(excinfo)

    bridge.compare("vec", body)


# 18
def test_vmap_rejected(bridge):
    def body(apply, t):
        b = np.array([4, 5, 6], np.float32)
        with pytest.raises(RuntimeError) as excinfo:
            torch.vmap(lambda x: apply(t, {"a": x, "b": b})["c"])(torch.ones(4, 3))
        assert t.calls == []
        return errors_type(excinfo)

    bridge.compare("vec", body)


# 19, 20
def test_dict_valued_input_and_output(bridge):
    def body(apply, t):
        x = torch.ones(3, requires_grad=True)
        p = torch.ones(3, requires_grad=True)
        out = apply(t, {"x": x, "params": {"p": p}})
        assert torch.equal(out["y"], torch.full((3,), 12.0))
        assert sorted(out["outs"]) == ["a", "b"]
        assert torch.equal(out["outs"]["a"], torch.full((3,), 3.0))
        assert torch.equal(out["outs"]["b"], torch.full((3,), 7.0))
        out["y"].sum().backward(retain_graph=True)
        assert torch.equal(p.grad, torch.full((3,), 10.0)) and torch.equal(x.grad, torch.full((3,), 2.0))
        x.grad, p.grad = None, None
        (out["outs"]["a"].sum() + out["outs"]["b"].sum()).backward()
        assert torch.equal(x.grad, torch.full((3,), 10.0))
        calls = t.gradient_calls()
        assert "params.{p}" in calls[0][1]
        assert calls[1][2] == ["outs.{a}", "outs.{b}"]
        return {"out": out, "x": x.grad, "p": p.grad, "calls": calls}

    bridge.compare("dict", body)


# 21
def test_list_per_position(bridge):
    def body(apply, t):
        xs = [torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)]
        out = apply(t, {"xs": xs})
        assert torch.equal(out["total"], torch.full((3,), 5.0))
        out["total"].sum().backward()
        assert torch.equal(xs[0].grad, torch.full((3,), 2.0)) and torch.equal(xs[1].grad, torch.full((3,), 3.0))
        return {"total": out["total"], "grads": [x.grad for x in xs]}

    bridge.compare("list", body)


# 22
def test_list_with_a_static_entry(bridge):
    def body(apply, t):
        xs = [torch.ones(3, requires_grad=True), torch.ones(3)]
        apply(t, {"xs": xs})["total"].sum().backward()
        assert torch.equal(xs[0].grad, torch.full((3,), 2.0)) and xs[1].grad is None
        return {"grad": xs[0].grad, "calls": t.gradient_calls()}

    bridge.compare("list", body)


# 23
def test_list_forward_mode(bridge):
    def body(apply, t):
        with fwAD.dual_level():
            xs = [torch.ones(3) for _ in range(4)]
            xs[2] = fwAD.make_dual(torch.ones(3), torch.ones(3))
            tangent = fwAD.unpack_dual(apply(t, {"xs": xs})["total"]).tangent
        assert torch.equal(tangent, torch.full((3,), 4.0))
        assert t.gradient_calls() == [("jvp", ["xs.[2]"], ["total"])]
        return {"tangent": tangent, "calls": t.gradient_calls()}

    bridge.compare("list", body)


# 24
def test_list_of_dicts(bridge):
    def body(apply, t):
        w0, w1, u1 = (torch.ones(2, dtype=F64, requires_grad=True) for _ in range(3))
        out = apply(t, {"layers": [{"w": w0}, {"w": w1, "u": u1}]})
        assert torch.equal(out["z"], torch.full((2,), 5.0, dtype=F64))
        out["z"].sum().backward()
        assert [g.grad[0].item() for g in (w0, w1, u1)] == [1.0, 2.0, 2.0]
        assert t.gradient_calls()[0][1] == ["layers.[0].{w}", "layers.[1].{u}", "layers.[1].{w}"]
        return {"z": out["z"], "grads": [w0.grad, w1.grad, u1.grad], "calls": t.gradient_calls()}

    bridge.compare("listdict", body)


# 25
def test_empty_dict_field(bridge):
    def body(apply, t):
        x = torch.ones(3, requires_grad=True)
        out = apply(t, {"x": x, "extras": {}})
        assert torch.equal(out["y"], torch.full((3,), 2.0))
        out["y"].sum().backward()
        assert torch.equal(x.grad, torch.full((3,), 2.0))
        e = torch.ones(3, requires_grad=True)
        apply(t, {"x": torch.ones(3), "extras": {"k": e}})["y"].sum().backward()
        assert torch.equal(e.grad, torch.ones(3))
        return {"y": out["y"], "x": x.grad, "e": e.grad}

    bridge.compare("optdict", body)


# 26
def test_mixed_leaf_kinds(bridge):
    def body(apply, t):
        x = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
        out = apply(t, {"x": x, "idx": torch.tensor([2, 0]), "scale": 2.0, "tag": "ab"})
        assert out["y"].grad_fn is not None and torch.equal(out["y"], torch.tensor([-2.0, 4.0, 6.0]))
        assert isinstance(out["picked"], np.ndarray) and out["picked"].dtype == np.float32
        assert np.array_equal(out["picked"], [3.0, -1.0])
        assert type(out["count"]) is int and out["count"] == 3
        assert out["tag_out"] == "AB"
        assert out["positive"].dtype == np.bool_ and out["positive"].tolist() == [False, True, True]
        out["y"].sum().backward()
        assert torch.equal(x.grad, torch.full((3,), 2.0))
        return {"out": out, "grad": x.grad}

    bridge.compare("mix", body)


# 27
def test_zero_length_arrays(bridge):
    def body(apply, t):
        a = torch.zeros(0, requires_grad=True)
        out = apply(t, {"a": a, "b": np.zeros(0, np.float32)})
        assert isinstance(out["c"], torch.Tensor) and out["c"].shape == (0,)
        out["c"].sum().backward()
        assert a.grad.shape == (0,)
        return {"c": out["c"], "grad": a.grad}

    bridge.compare("vec", body)


# 28
def test_zero_cotangents(bridge):
    def body(apply, t):
        a = torch.tensor(5.0, requires_grad=True)
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = apply(t, nest_inputs(a, v))
        loss = 0 * out["scalars"]["a"] + 0 * out["vectors"]["v"].sum()
        ga, gv = torch.autograd.grad(loss, (a, v), retain_graph=True)
        assert torch.equal(ga, torch.tensor(0.0)) and torch.equal(gv, torch.zeros(3))
        loss.backward()
        assert torch.equal(a.grad, torch.tensor(0.0)) and torch.equal(v.grad, torch.zeros(3))
        return {"ga": ga, "gv": gv}

    bridge.compare("nest", body)


NL_A = [1.0, 2.0, 3.0]
NL_B = [0.5, -1.0, 2.0]


# 29 (and the same Jacobian through forward mode)
@pytest.mark.parametrize("forward_mode", [False, True], ids=["reverse", "forward"])
def test_gradcheck(bridge, forward_mode):
    def body(apply, t):
        a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
        b = torch.tensor(NL_B, dtype=F64, requires_grad=True)
        passed = torch.autograd.gradcheck(
            lambda a, b: apply(t, {"a": a, "b": b})["y"], (a, b), eps=1e-6, atol=1e-8, check_forward_ad=forward_mode
        )
        assert passed is True
        return passed

    bridge.compare("nl", body)


def test_gradgradcheck_fails(bridge):
    def body(apply, t):
        a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
        b = torch.tensor(NL_B, dtype=F64, requires_grad=True)
        with pytest.raises(RuntimeError) as excinfo:
            torch.autograd.gradgradcheck(lambda a, b: apply(t, {"a": a, "b": b})["y"], (a, b), eps=1e-6, atol=1e-8)
        return errors_type(excinfo)

    bridge.compare("nl", body)


def test_first_order_gradients_with_create_graph(bridge):
    def body(apply, t):
        a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
        b = torch.tensor(NL_B, dtype=F64)
        (g,) = torch.autograd.grad(apply(t, {"a": a, "b": b})["y"].sum(), a, create_graph=True)
        expected = 3 * torch.tensor(NL_A, dtype=F64) ** 2 + b
        assert torch.allclose(g.detach(), expected)
        with pytest.raises(RuntimeError) as excinfo:
            g.sum().backward()
        return {"g": g.detach(), "error": errors_type(excinfo)}

    bridge.compare("nl", body)


# 30
def test_functional_jacobian(bridge):
    def body(apply, t):
        a = torch.tensor(NL_A, dtype=F64)
        b = torch.tensor(NL_B, dtype=F64)
        jac = torch.autograd.functional.jacobian(lambda a: apply(t, {"a": a, "b": b})["y"], a)
        assert torch.allclose(jac, torch.diag(3 * a**2 + b))
        vectorized = lambda: torch.autograd.functional.jacobian(  # noqa: E731
            lambda a: apply(t, {"a": a, "b": b})["y"], a, vectorize=True
        )
        if apply is tesseract_torch.apply_tesseract:
            with pytest.raises(RuntimeError):  # 0.2.0 refuses batched cotangents
                vectorized()
        else:  # ours: one VJP per cotangent of the batch (test_vmap.py has more)
            assert torch.equal(vectorized(), jac)
        return {"jac": jac}

    bridge.compare("nl", body)


def test_partial_tangents(bridge):
    def body(apply, t):
        a, b = torch.tensor(NL_A, dtype=F64), torch.tensor(NL_B, dtype=F64)
        tangents = {}
        for seeded in ("a", "b"):
            with fwAD.dual_level():
                inputs = {"a": a, "b": b}
                inputs[seeded] = fwAD.make_dual(inputs[seeded], torch.ones(3, dtype=F64))
                tangents[seeded] = fwAD.unpack_dual(apply(t, inputs)["y"]).tangent
        assert torch.allclose(tangents["a"], 3 * a**2 + b) and torch.allclose(tangents["b"], a)
        return tangents

    bridge.compare("nl", body)


# 31
def test_errors_propagate(bridge):
    def body(apply, t):
        with pytest.raises(Exception) as excinfo:  # noqa: PT011 - the type is what is compared
            apply(t, {"x": torch.ones(4, requires_grad=True), "params": {"p": torch.ones(3)}})
        return errors_type(excinfo)

    kind = bridge.compare("dict", body)
    assert kind in ("ValidationError", "RuntimeError")


# 32
@pytest.mark.parametrize("gpu_transport", [None, "cuda_ipc"])
def test_cpu_calls_never_resolve_a_transport(bridge, gpu_transport):
    def body(apply, t):
        def refuse():
            raise AssertionError("resolve_gpu_transport was called for a CPU call")

        t.resolve_gpu_transport = refuse
        # tesseract-torch 0.2.0 has no gpu_transport argument.
        kwargs = {"gpu_transport": gpu_transport} if apply is tesscpp.torch.apply_tesseract else {}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return apply(t, vec_inputs(), **kwargs)

    bridge.compare("vec", body)


def test_unsupported_gpu_transport_refused_before_any_call():
    recorder_calls = []

    class Refusing:
        def __getattr__(self, name):
            recorder_calls.append(name)
            raise AssertionError(f"{name} was used")

    with pytest.raises(ValueError, match="^Unsupported gpu_transport"):
        tesscpp.torch.apply_tesseract(Refusing(), vec_inputs(), gpu_transport="nvlink")
    assert recorder_calls == []


# 33
def test_transport_argument_on_cpu_tensors(bridge):
    t, _ = bridge.tesseracts("vec")
    plain = tesscpp.torch.apply_tesseract(t, vec_inputs())
    with_arg = tesscpp.torch.apply_tesseract(t, vec_inputs(), gpu_transport="cuda_ipc")
    forced = tesscpp.torch.apply_tesseract(t, vec_inputs(), gpu_transport="none")
    assert torch.equal(plain["c"], with_arg["c"]) and torch.equal(plain["c"], forced["c"])


# 34
def test_in_place_edit_before_backward(bridge):
    def body(apply, t):
        a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
        b = torch.tensor(NL_B, dtype=F64, requires_grad=True)
        out = apply(t, {"a": a, "b": b})
        with torch.no_grad():
            a.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as excinfo:
            out["y"].sum().backward()
        return errors_type(excinfo)

    bridge.compare("nl", body)


# 35
def test_outputs_are_writable_without_warnings(bridge):
    def body(apply, t):
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = apply(t, vec_inputs(a))
            c = out["c"].detach()
            c.add_(1)
        assert torch.equal(c, torch.tensor([6.0, 7.0, 8.0]) + torch.tensor([0.0, 1.0, 2.0]))
        out["c"].sum().backward()
        return {"c": c, "grad": a.grad}

    bridge.compare("vec", body)


def test_the_bridge_does_not_modify_its_inputs(bridge):
    def body(apply, t):
        first, second = torch.ones(3, requires_grad=True), torch.ones(3)
        xs = [first, second]
        inputs = {"xs": xs}
        apply(t, inputs)["total"].sum().backward()
        # The same dict holding the same list holding the same tensors, unchanged.
        assert list(inputs) == ["xs"] and inputs["xs"] is xs
        assert len(xs) == 2 and xs[0] is first and xs[1] is second
        assert first.requires_grad and not second.requires_grad
        assert torch.equal(first.detach(), torch.ones(3)) and torch.equal(second, torch.ones(3))
        return True

    bridge.compare("list", body)


# 41 (once: compiling is slow, and the backend does not matter to dynamo)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("client", ["tesscpp", "tesseract_core"])
def test_torch_compile_gives_the_eager_results(backends, backend, client):
    """torch.compile (default backend) of a function calling the bridge breaks
    its graph around the call and gives the eager values and gradients, on our
    Tesseract objects and on tesseract_core's. (Not compared with
    tesseract-torch 0.2.0: dynamo traces into its forward and fails there.)"""
    ours, theirs = backends.pair(backend, "nl")
    t = ours if client == "tesscpp" else theirs

    def f(a, b):
        return tesscpp.torch.apply_tesseract(t, {"a": a, "b": b})["y"].sum()

    a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
    b = torch.tensor(NL_B, dtype=F64, requires_grad=True)
    eager = f(a, b)
    eager_grads = torch.autograd.grad(eager, (a, b))
    torch._dynamo.reset()
    compiled = torch.compile(f)(a, b)
    compiled_grads = torch.autograd.grad(compiled, (a, b))
    assert torch.allclose(compiled, eager, rtol=0, atol=1e-10), (compiled, eager)
    for g, e in zip(compiled_grads, eager_grads, strict=True):
        assert torch.allclose(g, e, rtol=0, atol=1e-10), (g, e)


def test_torch_compile_fullgraph_is_a_named_refusal(backends):
    """fullgraph=True cannot hold an out-of-process call: torch says so by name."""
    t, _ = backends.pair("cpp-inprocess", "nl")

    def f(a, b):
        return tesscpp.torch.apply_tesseract(t, {"a": a, "b": b})["y"].sum()

    a = torch.tensor(NL_A, dtype=F64, requires_grad=True)
    b = torch.tensor(NL_B, dtype=F64, requires_grad=True)
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported, match="disable"):
        torch.compile(f, fullgraph=True)(a, b)
