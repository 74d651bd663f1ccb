"""tesscpp.jax against tesseract-jax 0.4.0 on nested, list and dict inputs,
static fields, float32 and float64 (docs/jax-bridge.md).

Each program runs with tesscpp.jax.apply_tesseract on a tesscpp.Tesseract
(the C++ fixture in-process, served by tesscpp, and its Python twin served by
tesscpp's runtime) and with tesseract_jax.apply_tesseract on a
tesseract_core.Tesseract reaching the Python twin on tesseract-runtime (the
reference). Values and dtypes must be equal, and the jitted rows must have
gone through the custom call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tesseract_core
import tesseract_jax

import tesscpp.jax

jax.config.update("jax_enable_x64", True)  # listdict answers float64

OURS = ("cpp-inprocess", "cpp-served", "py-tesscpp")


def nest_program(apply: Callable, t: Any) -> dict[str, Any]:
    """Nested models; a and v traced, b and w static arrays, other_stuff static."""

    def f(a, v):
        out = apply(t, _nest_inputs(a, v), vmap_method="sequential")
        return out["scalars"]["a"] + jnp.sum(out["vectors"]["v"] ** 2)

    a, v = jnp.float32(1.5), jnp.array([1.0, 2.0, 3.0], jnp.float32)
    primal, tangent = jax.jvp(f, (a, v), (jnp.float32(1.0), jnp.ones(3, jnp.float32)))
    return {
        "value": f(a, v),
        "jit": jax.jit(f)(a, v),
        "grad": jax.grad(f, argnums=(0, 1))(a, v),
        "jit(grad)": jax.jit(jax.grad(f, argnums=(0, 1)))(a, v),
        "jvp": (primal, tangent),
        "jacfwd": jax.jacfwd(f, argnums=1)(a, v),
        "vmap(grad)": jax.vmap(jax.grad(f))(jnp.array([0.5, 1.0], jnp.float32), jnp.ones((2, 3), jnp.float32)),
    }


def _nest_inputs(a: Any, v: Any) -> dict[str, Any]:
    return {
        "scalars": {"a": a, "b": np.float32(2.0)},
        "vectors": {"v": v, "w": np.array([0, 1, 2], np.float32)},
        "other_stuff": {"s": "x", "i": 1, "f": 0.5},
    }


def listdict_program(apply: Callable, t: Any) -> dict[str, Any]:
    """A list of dicts of float64 arrays; two traced, one static."""

    def f(p, r):
        layers = [{"p": p, "q": np.array([1.0, -1.0])}, {"r": r}]
        return jnp.sum(apply(t, {"layers": layers})["z"] * jnp.array([1.0, 3.0]))

    p, r = jnp.array([0.5, 2.0]), jnp.array([-1.0, 4.0])
    return {
        "value": f(p, r),
        "jit": jax.jit(f)(p, r),
        "grad": jax.grad(f, argnums=(0, 1))(p, r),
        "jit(grad)": jax.jit(jax.grad(f, argnums=(0, 1)))(p, r),
        "jvp": jax.jvp(f, (p, r), (jnp.ones(2), jnp.zeros(2))),
    }


PROGRAMS = {"nest": nest_program, "listdict": listdict_program}


def _leaves(result: dict[str, Any]) -> dict[str, Any]:
    return {f"{name}{path}": leaf for name, tree in result.items() for path, leaf in _flat(tree)}


def _flat(tree: Any) -> list[tuple[str, Any]]:
    return [(jax.tree_util.keystr(k), v) for k, v in jax.tree_util.tree_flatten_with_path(tree)[0]]


@pytest.fixture(scope="module")
def references(backends) -> dict[str, dict[str, Any]]:
    """Each program through tesseract-jax on tesseract-runtime."""
    return {name: _leaves(program(tesseract_jax.apply_tesseract, backends.pair("py-served", name)[1]))
            for name, program in PROGRAMS.items()}  # fmt: skip


@pytest.mark.parametrize("backend", OURS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_match_tesseract_jax(backends, references, backend, name):
    ours_t = backends.pair(backend, name)[0]
    before = tesscpp.jax.ffi_calls()
    ours = _leaves(PROGRAMS[name](tesscpp.jax.apply_tesseract, ours_t))
    assert tesscpp.jax.ffi_calls() > before  # the jitted rows ran the custom call
    reference = references[name]
    assert sorted(ours) == sorted(reference)
    for key, value in ours.items():
        assert jnp.asarray(value).dtype == jnp.asarray(reference[key]).dtype, key
        np.testing.assert_allclose(value, reference[key], rtol=1e-6, err_msg=key)


class _KeywordsOnly(tesseract_core.Tesseract):
    """A Tesseract object whose derivative methods take keywords only, as the
    mocks of tesseract-jax's own tests do: a bridge must call them as
    tesseract-jax does (apply and abstract_eval with the inputs by position,
    the derivatives with every argument by keyword)."""

    def __init__(self, inner: tesseract_core.Tesseract) -> None:  # noqa: D107 - wraps, does not serve
        self._inner = inner

    @property
    def openapi_schema(self) -> dict:
        return self._inner.openapi_schema

    @property
    def available_endpoints(self) -> list[str]:
        return self._inner.available_endpoints

    def apply(self, inputs: dict) -> dict:
        return self._inner.apply(inputs)

    def abstract_eval(self, abstract_inputs: dict) -> dict:
        return self._inner.abstract_eval(abstract_inputs)

    def jacobian_vector_product(self, *, inputs, jvp_inputs, jvp_outputs, tangent_vector) -> dict:
        return self._inner.jacobian_vector_product(inputs=inputs, jvp_inputs=jvp_inputs, jvp_outputs=jvp_outputs,
                                                   tangent_vector=tangent_vector)  # fmt: skip

    def vector_jacobian_product(self, *, inputs, vjp_inputs, vjp_outputs, cotangent_vector) -> dict:
        return self._inner.vector_jacobian_product(inputs=inputs, vjp_inputs=vjp_inputs, vjp_outputs=vjp_outputs,
                                                   cotangent_vector=cotangent_vector)  # fmt: skip

    def jacobian(self, *, inputs, jac_inputs, jac_outputs) -> dict:
        return self._inner.jacobian(inputs=inputs, jac_inputs=jac_inputs, jac_outputs=jac_outputs)


def test_methods_that_take_keywords_only_are_called_as_tesseract_jax_calls_them(backends, references):
    """The nest program through tesscpp.jax on such an object (its Python
    callback path) equals tesseract-jax's on tesseract-runtime."""
    wrapped = _KeywordsOnly(backends.pair("py-served", "nest")[1])
    ours = _leaves(nest_program(tesscpp.jax.apply_tesseract, wrapped))
    assert sorted(ours) == sorted(references["nest"])
    for key, value in ours.items():
        np.testing.assert_allclose(value, references["nest"][key], rtol=1e-6, err_msg=key)


def test_a_tangent_for_a_static_array_is_refused_as_tesseract_jax_refuses_it(backends):
    """nest's scalars.b is an array but not Differentiable: a tangent for it fails."""

    def program(apply, t):
        def f(b):
            inputs = {
                "scalars": {"a": np.float32(1.0), "b": b},
                "vectors": {"v": np.ones(3, np.float32)},
                "other_stuff": {"s": "x", "i": 1, "f": 0.5},
            }
            return apply(t, inputs)["scalars"]["a"]

        with pytest.raises(ValueError, match="non-differentiable input 'scalars.b'") as info:
            jax.jvp(f, (jnp.float32(2.0),), (jnp.float32(1.0),))
        return str(info.value)

    ours = program(tesscpp.jax.apply_tesseract, backends.pair("cpp-served", "nest")[0])
    theirs = program(tesseract_jax.apply_tesseract, backends.pair("py-served", "nest")[1])
    assert ours == theirs


def test_tesseract_jaxs_sow_and_save_intermediates_work_on_tesscpp_jax(backends):
    """sow/save_intermediates act on JAX values, not on the call: tesseract-jax's
    own capture the primals and cotangents of a pipeline through tesscpp.jax
    as through tesseract-jax (tesscpp.jax has none of its own yet)."""

    def captured(apply, t):
        def pipeline(a, v):
            out = tesseract_jax.sow(apply(t, _nest_inputs(a, v)), "step1")
            return out["scalars"]["a"] + jnp.sum(out["vectors"]["v"] ** 2)

        a, v = jnp.float32(1.5), jnp.array([1.0, 2.0, 3.0], jnp.float32)
        forward = tesseract_jax.save_intermediates(pipeline)(a, v)
        backward = tesseract_jax.save_intermediates(jax.grad(pipeline, argnums=(0, 1)))(a, v)
        return _leaves({"forward": forward, "backward": backward})

    ours = captured(tesscpp.jax.apply_tesseract, backends.pair("cpp-served", "nest")[0])
    reference = captured(tesseract_jax.apply_tesseract, backends.pair("py-served", "nest")[1])
    assert sorted(ours) == sorted(reference) and any("step1" in k for k in ours), sorted(ours)
    for key, value in ours.items():
        np.testing.assert_allclose(value, reference[key], rtol=1e-6, err_msg=key)


def test_parallel_sends_a_batch_at_once_and_equals_sequential(backends):
    """vmap_method="parallel" (tesscpp's, as in tesscpp.torch): one request per
    element, sent at once by the custom call's handler (its peak of requests
    under way) or by the callback's threads; values and gradients, including
    the summed gradient of an input the batch shares, equal "sequential"."""
    ours_t = backends.pair("cpp-served", "nest")[0]
    core_t = backends.pair("cpp-served", "nest")[1]
    tesscpp.jax.ffi_requests_peak(reset=True)  # this test's peak, not the process's

    def results(t, method):
        def one(a, v):
            out = tesscpp.jax.apply_tesseract(t, _nest_inputs(a, v), vmap_method=method)
            return out["scalars"]["a"] + jnp.sum(out["vectors"]["v"] ** 2)

        batched = jax.vmap(one, in_axes=(0, None))  # v is shared by the batch
        a, v = jnp.linspace(0, 1, 16, dtype=jnp.float32), jnp.array([1.0, 2.0, 3.0], jnp.float32)
        loss = jax.jit(jax.value_and_grad(lambda a, v: jnp.sum(batched(a, v)), argnums=(0, 1)))
        return _leaves({"values": jax.jit(batched)(a, v), "loss": loss(a, v), "eager": batched(a, v)})

    reference = results(ours_t, "sequential")
    for t in (ours_t, core_t):
        parallel = results(t, "parallel")
        assert sorted(parallel) == sorted(reference)
        for key, value in parallel.items():
            np.testing.assert_allclose(value, reference[key], rtol=1e-6, err_msg=key)
    assert tesscpp.jax.ffi_requests_peak() >= 2


def test_gpu_transport_is_checked_and_ignored_for_host_arrays(backends):
    """tesscpp's gpu_transport argument: an unknown value is refused naming the
    choices; on host arrays "cuda_ipc" changes nothing (it applies to arrays
    on a CUDA device, tests/test_gpu_jax.py)."""
    t = backends.pair("cpp-served", "nest")[0]
    inputs = _nest_inputs(jnp.float32(1.5), jnp.array([1.0, 2.0, 3.0], jnp.float32))
    with pytest.raises(ValueError, match=r"Unknown gpu_transport: 'nvlink'\. Must be None or one of"):
        tesscpp.jax.apply_tesseract(t, inputs, gpu_transport="nvlink")

    def f(a, transport):
        return tesscpp.jax.apply_tesseract(t, _nest_inputs(a, inputs["vectors"]["v"]), gpu_transport=transport)

    expected = jax.jit(lambda a: f(a, None)["scalars"]["a"])(jnp.float32(1.5))
    assert jax.jit(lambda a: f(a, "cuda_ipc")["scalars"]["a"])(jnp.float32(1.5)) == expected


def test_a_jaxlib_with_an_older_ffi_api_is_refused_before_registering(monkeypatch, tmp_path):
    """A handler built against a newer XLA FFI API than jaxlib's makes XLA fail
    to start its backend (seen with jaxlib 0.7.0, API 0.1, and a 0.3 handler):
    the version is compared first, and the refusal names both versions."""
    from tesscpp.jax import _lowering

    major, minor = tesscpp._tesscpp._jax_ffi_api_version()
    header = tmp_path / "xla" / "ffi" / "api" / "c_api.h"
    header.parent.mkdir(parents=True)
    monkeypatch.setattr(jax.ffi, "include_dir", lambda: str(tmp_path))
    header.write_text(f"#define XLA_FFI_API_MAJOR {major}\n#define XLA_FFI_API_MINOR {minor}\n")
    assert _lowering._refusal() is None
    header.write_text(f"#define XLA_FFI_API_MAJOR {major}\n#define XLA_FFI_API_MINOR {minor + 1}\n")
    assert _lowering._refusal() is None  # a newer jaxlib runs older handlers
    if minor > 0:
        header.write_text(f"#define XLA_FFI_API_MAJOR {major}\n#define XLA_FFI_API_MINOR {minor - 1}\n")
        assert f"built against XLA FFI API {major}.{minor}, this jaxlib" in _lowering._refusal()
    header.write_text(f"#define XLA_FFI_API_MAJOR {major + 1}\n#define XLA_FFI_API_MINOR 0\n")
    assert f"has {major + 1}.0" in _lowering._refusal()
    header.write_text("/* no version */\n")
    assert "name no API version" in _lowering._refusal()
