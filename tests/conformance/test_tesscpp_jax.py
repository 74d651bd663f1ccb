"""tesscpp.jax against tesseract-jax 0.4.0 (docs/jax-bridge.md).

The same JAX program runs twice: tesscpp.jax.apply_tesseract with a
tesscpp.Tesseract reaching `tesscpp serve` of the univariate example (the
Rosenbrock function), and tesseract_jax.apply_tesseract with a
tesseract_core.Tesseract reaching tesseract-runtime serving its Python twin.
Values, dtypes, gradients and tangents must agree, jitted calls must have
run the custom call's C++ handler (its counter), and tesscpp.jax with
tesseract-core's client (the Python callback) must agree too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tesseract_core
import tesseract_jax

import tesscpp
import tesscpp.jax
from jax_program import X, Y, program


@pytest.fixture
def univariate(servers):
    """(ours, reference): tesscpp's client on tesscpp serve, tesseract-core's on tesseract-runtime."""
    ours = tesscpp.Tesseract.from_url(servers.get("univariate").url)
    reference = tesseract_core.Tesseract.from_url(servers.reference("univariate").url)
    return ours, reference


@pytest.mark.tesscpp_only
def test_the_same_program_gives_the_same_results(univariate):
    ours_t, reference_t = univariate
    ours = program(tesscpp.jax.apply_tesseract, ours_t)
    reference = program(tesseract_jax.apply_tesseract, reference_t)
    assert sorted(ours) == sorted(reference)
    for name in ours:
        assert jnp.asarray(ours[name]).dtype == jnp.asarray(reference[name]).dtype, name
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-6, err_msg=name)


@pytest.mark.tesscpp_only
def test_tesseract_cores_client_goes_through_the_callback(univariate):
    _, reference_t = univariate
    before = tesscpp.jax.ffi_calls()
    ours = program(tesscpp.jax.apply_tesseract, reference_t)
    reference = program(tesseract_jax.apply_tesseract, reference_t)
    for name in ours:
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-6, err_msg=name)
    assert tesscpp.jax.ffi_calls() == before  # no custom call for a client that is not ours


@pytest.mark.tesscpp_only
def test_jitted_calls_run_the_custom_call(univariate):
    """Under jit a tesscpp.Tesseract is called by the C++ handler: its counter
    moves by one per call the program makes."""
    ours_t, _ = univariate
    assert tesscpp.jax.ffi_available()

    def f(x, y):
        return tesscpp.jax.apply_tesseract(ours_t, {"x": x, "y": y})["result"]

    jitted, jitted_grad = jax.jit(f), jax.jit(jax.grad(f, argnums=(0, 1)))
    jitted(jnp.float32(X), jnp.float32(Y)).block_until_ready()
    jax.block_until_ready(jitted_grad(jnp.float32(X), jnp.float32(Y)))
    before = tesscpp.jax.ffi_calls()
    for k in range(5):
        np.testing.assert_allclose(jitted(jnp.float32(k), jnp.float32(Y)), (1 - k) ** 2 + 100 * (Y - k**2) ** 2)
    assert tesscpp.jax.ffi_calls() - before == 5
    jax.block_until_ready(jitted_grad(jnp.float32(X), jnp.float32(Y)))
    assert tesscpp.jax.ffi_calls() - before == 6  # the grad needs the VJP only: JAX drops the unused apply


@pytest.mark.tesscpp_only
def test_errors_are_tesseract_jaxs(univariate):
    ours_t, reference_t = univariate
    for apply, t in ((tesscpp.jax.apply_tesseract, ours_t), (tesseract_jax.apply_tesseract, reference_t)):
        with pytest.raises(TypeError, match="The first argument must be a Tesseract object"):
            apply(object(), {"x": 1.0, "y": 2.0})
        with pytest.raises(ValueError, match="Unknown vmap_method: 'nope'"):
            apply(t, {"x": 1.0, "y": 2.0}, vmap_method="nope")
        with pytest.raises(NotImplementedError, match="vmap/jacobian is not supported with vmap_method=None"):
            jax.vmap(lambda x, apply=apply, t=t: apply(t, {"x": x, "y": jnp.float32(2.0)})["result"])(
                jnp.ones(3, jnp.float32)
            )
        with pytest.raises(TypeError, match="Input 'x' expects an array, but got list"):
            apply(t, {"x": [1.0], "y": 2.0})


def _mesh(points):
    return {
        "mesh": {
            "n_points": 4,
            "n_cells": 1,
            "points": points,
            "num_points_per_cell": np.array([4.0], np.float32),
            "cell_connectivity": np.array([0, 1, 2, 3], np.int32),
            "cell_data": {},
            "point_data": {},
        }
    }


@pytest.mark.tesscpp_only
def test_a_tesseract_with_only_a_jacobian(servers):
    """meshstats has a jacobian endpoint and no VJP or JVP. grad is refused in
    tesseract-jax's words by both bridges. jacrev and jacfwd need only the
    jacobian in tesscpp.jax (batched cotangents go there first); tesseract-jax
    checks for the VJP/JVP first and refuses them (docs/compatibility.md).
    Ours equal the jacobian endpoint's answer on tesseract-runtime."""
    ours_t = tesscpp.Tesseract.from_url(servers.get("meshstats").url)
    reference_t = tesseract_core.Tesseract.from_url(servers.reference("meshstats").url)
    points = jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 7

    def barycenter(apply, t):
        return lambda p: apply(t, _mesh(p))["statistics"]["barycenter"]

    refusals = []
    for apply, t in ((tesscpp.jax.apply_tesseract, ours_t), (tesseract_jax.apply_tesseract, reference_t)):
        with pytest.raises(NotImplementedError) as refused:
            jax.grad(lambda p, apply=apply, t=t: jnp.sum(barycenter(apply, t)(p)))(points)
        refusals.append(str(refused.value))
    want = "Endpoint 'vector_jacobian_product' not implemented for this Tesseract. Available endpoints: "
    assert all(r.startswith(want) for r in refusals), refusals
    for transform in (jax.jacrev, jax.jacfwd):
        with pytest.raises(NotImplementedError, match="not implemented for this Tesseract"):
            transform(barycenter(tesseract_jax.apply_tesseract, reference_t))(points)

    expected = reference_t.jacobian(_mesh(np.asarray(points)), ["mesh.points"], ["statistics.barycenter"])
    expected = np.asarray(expected["statistics.barycenter"]["mesh.points"])
    assert expected.shape == (3, 4, 3)
    for transform in (jax.jacrev, jax.jacfwd):
        ours = transform(barycenter(tesscpp.jax.apply_tesseract, ours_t))(points)
        assert ours.dtype == jnp.float32 and ours.shape == (3, 4, 3)
        np.testing.assert_allclose(ours, expected, rtol=1e-6)
