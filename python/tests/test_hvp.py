"""tesscpp's /hessian_vector_product (docs/derivatives.md) from Python: a C++
component's, derived on its ADOL-C tape, and a tesseract_api.py's own, through
the client, the document and the validation a user meets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import tesscpp
from conftest import fixture_api, fixture_library, required_dir

X = np.array([1.0, -2.0, 0.5])
U = np.array([0.3, 1.0, -0.7])
V = np.array([-1.0, 0.25, 2.0])


def expected_hvp(x: np.ndarray, u: np.ndarray, v: np.ndarray, scale: float = 1.0) -> np.ndarray:
    u = scale * u
    return 2 * v * (u @ x) + 2 * x * (u @ v) + 2 * u * (x @ v)


def openapi(t: tesscpp.Tesseract) -> dict:
    with urllib.request.urlopen(t.url + "/openapi.json") as answer:
        return json.loads(answer.read())


def test_a_derived_cpp_component_answers_with_its_tape() -> None:
    """rosenbrock_ad's HVP, forward over reverse on its tape, against its Hessian."""
    x, y, a, b = 0.5, 1.5, 1.0, 100.0
    hessian = np.array([[2 - 4 * b * y + 12 * b * x * x, -4 * b * x], [-4 * b * x, 2 * b]])
    v = np.array([0.25, -1.0])
    with tesscpp.Tesseract.from_source(required_dir("TESSCPP_EXAMPLES_DIR") / "librosenbrock_ad.so") as t:
        answer = t.hessian_vector_product(
            {"x": x, "y": y, "a": a, "b": b}, ["x", "y"], ["result"], {"x": v[0], "y": v[1]}, {"result": 2.0}
        )
        document = openapi(t)
    np.testing.assert_allclose([answer["x"], answer["y"]], 2.0 * hessian @ v, rtol=1e-6)
    operation = document["paths"]["/hessian_vector_product"]["post"]
    assert "lagra_hess_vec" in operation["description"]
    request = document["components"]["schemas"]["HVPInputSchema"]
    assert list(request["properties"]) == ["inputs", "hvp_inputs", "hvp_outputs", "tangent_vector", "cotangent_vector"]


@pytest.fixture(scope="module")
def module() -> tesscpp.Tesseract:
    with tesscpp.Tesseract.from_source(fixture_api("hvp"), python_executable=sys.executable) as t:
        yield t


def test_a_python_module_serves_its_own(module: tesscpp.Tesseract) -> None:
    answer = module.hessian_vector_product({"x": X, "scale": 2.0}, ["x"], ["y"], {"x": V}, {"y": U})
    np.testing.assert_allclose(answer["x"], expected_hvp(X, U, V, 2.0))
    document = openapi(module)
    operation = document["paths"]["/hessian_vector_product"]["post"]
    assert operation["description"].startswith("Compute the Hessian vector product")
    assert "Analytic" in operation["description"]
    assert any(p["name"] == "accept" for p in operation["parameters"])
    request = document["components"]["schemas"]["HVPInputSchema"]
    assert request["required"] == ["inputs", "hvp_inputs", "hvp_outputs", "tangent_vector", "cotangent_vector"]
    assert "Hvp_InputSchema" in document["components"]["schemas"]


def test_a_python_module_refuses_vectors_that_do_not_fit(module: tesscpp.Tesseract) -> None:
    """The JVP's and VJP's rules, under hvp_ names: a 422 naming the field."""

    def body(tangent: dict, cotangent: dict) -> dict:
        return {
            "inputs": {"x": X},
            "hvp_inputs": ["x"],
            "hvp_outputs": ["y"],
            "tangent_vector": tangent,
            "cotangent_vector": cotangent,
        }

    with pytest.raises(Exception, match="tangent vector with keys conforming to hvp_inputs"):
        module.call("hessian_vector_product", body({}, {"y": U}))
    with pytest.raises(Exception, match="Tangent vector 'x'"):
        module.hessian_vector_product({"x": X}, ["x"], ["y"], {"x": V[:2]}, {"y": U})
    with pytest.raises(Exception, match="cotangent vector with keys conforming to hvp_outputs"):
        module.call("hessian_vector_product", body({"x": V}, {}))


def test_tesseract_runtime_serves_the_module_without_it() -> None:
    """The function is tesscpp's: tesseract-runtime ignores it, and the module
    still serves the reference's endpoints there."""
    with tesscpp.Tesseract.from_source(
        fixture_api("hvp"), python_executable=sys.executable, python_runtime="tesseract-runtime"
    ) as t:
        assert "/hessian_vector_product" not in openapi(t)["paths"]
        np.testing.assert_allclose(t.apply({"x": X})["y"], X * (X @ X))
        with pytest.raises(NotImplementedError):
            t.hessian_vector_product({"x": X}, ["x"], ["y"], {"x": V}, {"y": U})


def check_gradients(api: Path) -> subprocess.CompletedProcess:
    # tesseract_api.py targets are served by the tesseract-runtime of this Python.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    return subprocess.run(
        [str(required_dir("TESSCPP_CLI")), "check-gradients", str(api), '{"inputs": {"x": [1.0, -2.0, 0.5]}}',
         "--endpoints", "hessian_vector_product", "--seed", "3"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_check_gradients_checks_it_against_differences_of_the_vjp(tmp_path: Path) -> None:
    """`tesscpp check-gradients` passes the module's HVP and fails one that is off by a term."""
    right = check_gradients(fixture_api("hvp"))
    assert right.returncode == 0, right.stdout + right.stderr
    assert "Gradient check for hessian_vector_product passed" in right.stdout
    wrong = tmp_path / "wrong_hvp" / "tesseract_api.py"
    wrong.parent.mkdir()
    source = fixture_api("hvp").read_text()
    assert "2 * u * (x @ v)" in source
    wrong.write_text(source.replace("2 * u * (x @ v)", "u * (x @ v)"))
    failed = check_gradients(wrong)
    assert failed.returncode != 0
    assert "Gradient check for hessian_vector_product failed" in failed.stdout


@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_the_helpers_compute_it_forward_over_reverse(framework: str) -> None:
    """tesscpp.derivatives' helpers on y = s x * sum(x^2), s held fixed by closing over it."""
    from tesscpp import derivatives

    scale = 2.0
    if framework == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        hvp = derivatives.jax_hvp(lambda p: {"y": scale * p["x"] * (p["x"] @ p["x"])}, {"x": X}, {"x": V}, {"y": U})
    else:
        hvp = derivatives.torch_hvp(lambda p: {"y": scale * p["x"] * (p["x"] @ p["x"])}, {"x": X}, {"x": V}, {"y": U})
    assert set(hvp) == {"x"}
    np.testing.assert_allclose(np.asarray(hvp["x"]), expected_hvp(X, U, V, scale), rtol=1e-12)


def native(x, scale: float = 1.0):
    """The hvp fixture's function, for the frameworks to differentiate themselves."""
    return scale * x * (x @ x)


@pytest.mark.parametrize("loss", ["linear", "quadratic"])
def test_torch_double_backward_uses_the_hvp(module: tesscpp.Tesseract, loss: str) -> None:
    """torch.autograd.functional.hvp through apply_tesseract equals torch's own on
    the same function: the linear loss needs the Tesseract's HVP, the quadratic
    one (whose cotangent depends on x) its JVP too."""
    import torch

    from tesscpp.torch import apply_tesseract

    w = torch.tensor(U)

    def through(x):
        y = apply_tesseract(module, {"x": x, "scale": 2.0})["y"]
        return (w * y).sum() if loss == "linear" else 0.5 * (y * y).sum()

    def own(x):
        y = native(x, 2.0)
        return (w * y).sum() if loss == "linear" else 0.5 * (y * y).sum()

    x, v = torch.tensor(X), torch.tensor(V)
    value, hvp = torch.autograd.functional.hvp(through, x, v)
    want_value, want_hvp = torch.autograd.functional.hvp(own, x, v)
    torch.testing.assert_close(value, want_value)
    torch.testing.assert_close(hvp, want_hvp)
    if loss == "linear":
        np.testing.assert_allclose(hvp.numpy(), expected_hvp(X, U, V, 2.0))


def test_a_tesseract_without_the_hvp_refuses_second_order_in_words(module: tesscpp.Tesseract) -> None:
    import torch

    from tesscpp.torch import apply_tesseract

    with tesscpp.Tesseract.from_source(fixture_library("nl")) as t:
        a = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(apply_tesseract(t, {"a": a, "b": torch.zeros(2, dtype=torch.float64)})["y"].sum(),
                                   a, create_graph=True)  # fmt: skip
        with pytest.raises(RuntimeError, match="hessian_vector_product endpoint"):
            g.sum().backward()


def test_jax_forward_over_reverse_uses_the_hvp(module: tesscpp.Tesseract) -> None:
    """jax.jvp(jax.grad(f)) and jax.hessian through tesscpp.jax equal JAX's own."""
    import jax
    import jax.numpy as jnp

    from tesscpp.jax import apply_tesseract

    jax.config.update("jax_enable_x64", True)

    def through(x):
        return jnp.sum(jnp.asarray(U) * apply_tesseract(module, {"x": x, "scale": 2.0}, vmap_method="sequential")["y"])

    def own(x):
        return jnp.sum(jnp.asarray(U) * native(x, 2.0))

    x, v = jnp.asarray(X), jnp.asarray(V)
    _, hvp = jax.jvp(jax.grad(through), (x,), (v,))
    np.testing.assert_allclose(np.asarray(hvp), expected_hvp(X, U, V, 2.0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.hessian(through)(x)), np.asarray(jax.hessian(own)(x)), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(jax.jit(jax.hessian(through))(x)), np.asarray(jax.hessian(own)(x)), rtol=1e-12
    )


def test_jax_reverse_over_reverse_uses_the_hvp(module: tesscpp.Tesseract) -> None:
    """jax.grad of a function of jax.grad (a gradient penalty): the VJP's and
    the HVP's transposes."""
    import jax
    import jax.numpy as jnp

    from tesscpp.jax import apply_tesseract

    jax.config.update("jax_enable_x64", True)
    w2 = jnp.asarray([0.5, -1.5, 2.0])

    def through(x):
        return jnp.sum(jnp.asarray(U) * apply_tesseract(module, {"x": x, "scale": 2.0})["y"])

    def own(x):
        return jnp.sum(jnp.asarray(U) * native(x, 2.0))

    def through_quadratic(x):  # its cotangent y depends on x: the VJP's transpose (a JVP) runs too
        return 0.5 * jnp.sum(apply_tesseract(module, {"x": x, "scale": 2.0})["y"] ** 2)

    def own_quadratic(x):
        return 0.5 * jnp.sum(native(x, 2.0) ** 2)

    x = jnp.asarray(X)
    for mine, theirs in ((through, own), (through_quadratic, own_quadratic)):
        got = jax.grad(lambda x, f=mine: jnp.sum(w2 * jax.grad(f)(x)))(x)
        want = jax.grad(lambda x, f=theirs: jnp.sum(w2 * jax.grad(f)(x)))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


BURGERS = {"dt": 2e-4, "dx": 0.05, "steps": 3}
BURGERS_U = np.sin(np.linspace(0, 2 * np.pi, 8, endpoint=False)) + 0.3 * np.cos(np.arange(8.0))


@pytest.fixture(scope="module")
def burgers() -> tesscpp.Tesseract:
    """burgers_ad: two differentiable inputs (u, nu), its HVP derived on the ADOL-C tape."""
    with tesscpp.Tesseract.from_source(required_dir("TESSCPP_EXAMPLES_DIR") / "libburgers_ad.so") as t:
        yield t


def test_torch_gradgradcheck_with_two_inputs(burgers: tesscpp.Tesseract) -> None:
    """gradgradcheck differentiates the double backward numerically: the HVP
    blocks between u and nu (answered and moved sets that differ) and their
    transposes, and the JVP for the cotangent's part."""
    import torch

    from tesscpp.torch import apply_tesseract

    u = torch.tensor(BURGERS_U, requires_grad=True)
    nu = torch.tensor(0.08, dtype=torch.float64, requires_grad=True)

    def step(u: torch.Tensor, nu: torch.Tensor) -> torch.Tensor:
        return apply_tesseract(burgers, {"u": u, "nu": nu, **BURGERS})["u_next"]

    assert torch.autograd.gradgradcheck(step, (u, nu), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_jax_second_order_across_two_inputs(burgers: tesscpp.Tesseract) -> None:
    """The gradient in u moved along nu (forward over reverse) and a penalty on
    it differentiated in nu (reverse over reverse), against central differences
    of the gradient."""
    import jax
    import jax.numpy as jnp

    from tesscpp.jax import apply_tesseract

    jax.config.update("jax_enable_x64", True)
    u, w = jnp.asarray(BURGERS_U), jnp.linspace(-1.0, 1.0, 8)

    def loss(u, nu):
        return apply_tesseract(burgers, {"u": u, "nu": nu, **BURGERS})["energy"]

    def grad_u(nu):
        return jax.grad(loss)(u, nu)

    h = 1e-5
    along_nu = (grad_u(0.08 + h) - grad_u(0.08 - h)) / (2 * h)
    _, moved = jax.jvp(grad_u, (0.08,), (1.0,))
    np.testing.assert_allclose(np.asarray(moved), np.asarray(along_nu), rtol=1e-6, atol=1e-9)
    penalty = jax.grad(lambda nu: jnp.sum(w * grad_u(nu)))(0.08)
    np.testing.assert_allclose(float(penalty), float(jnp.sum(w * along_nu)), rtol=1e-6, atol=1e-9)
