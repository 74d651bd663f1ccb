"""tesseract-jax 0.4.0 (the newest for Python 3.11) with tesscpp components.

tesseract-jax drives a tesseract_core.Tesseract; here that client reaches
`tesscpp serve` of the univariate example (the Rosenbrock function) — with
--server-backend=tesscpp-py, its Python twin served by tesscpp's runtime — and
the same JAX program runs against tesseract-runtime serving the Python twin
(tests/fixtures/python/univariate). Every value, gradient and tangent must
agree between the two servers and with the closed form, and tesscpp's
/metrics must show that the derivative endpoints were the ones called.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import tesseract_core
from tesseract_jax import apply_tesseract

from conftest import answered
from jax_program import X, Y, program


def rosenbrock(x: float, y: float) -> float:
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def gradient(x: float, y: float) -> tuple[float, float]:
    return -2 * (1 - x) - 400 * x * (y - x**2), 200 * (y - x**2)


@pytest.mark.tesscpp_only
def test_jax_transformations_through_tesscpp_match_tesseract_runtime(servers):
    ours_server = servers.fresh("univariate")  # its own, so its /metrics count this test's calls only
    ours = program(apply_tesseract, tesseract_core.Tesseract.from_url(ours_server.url))
    reference = program(apply_tesseract, tesseract_core.Tesseract.from_url(servers.reference("univariate").url))
    assert sorted(ours) == sorted(reference)
    for name in ours:
        assert ours[name].dtype == reference[name].dtype == jnp.float32, name
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-6, err_msg=name)

    fx, (gx, gy) = rosenbrock(X, Y), gradient(X, Y)
    np.testing.assert_allclose(ours["apply"], fx, rtol=1e-6)
    np.testing.assert_allclose(ours["jit"], fx, rtol=1e-6)
    np.testing.assert_allclose(ours["jvp primal"], fx, rtol=1e-6)
    np.testing.assert_allclose(ours["jvp tangent"], gx * 1.0 + gy * 0.5, rtol=1e-5)
    for name in ("grad", "jit(grad)", "jacfwd", "jacrev"):
        np.testing.assert_allclose(ours[name], [gx, gy], rtol=1e-5, err_msg=name)
    points = [(0.0, 0.0), (1.0, 1.0), (1.5, 2.0), (-1.2, 1.0)]
    np.testing.assert_allclose(ours["vmap"], [rosenbrock(*p) for p in points], rtol=1e-5)
    np.testing.assert_allclose(ours["jit(vmap(grad))"], np.array([gradient(*p) for p in points]).T, rtol=1e-5)

    # tesseract-jax reached tesscpp's endpoints: shapes from abstract_eval, reverse mode
    # through the VJP, forward mode through the JVP, jacfwd/jacrev through the jacobian.
    seen = answered(ours_server.url)
    for endpoint in ("/apply", "/abstract_eval", "/vector_jacobian_product", "/jacobian_vector_product", "/jacobian"):
        assert seen.get(endpoint, 0) >= 1, (endpoint, seen)
    assert seen["/apply"] >= 4 + len(points), seen  # apply, jit, jvp's primal and the batch, at least
