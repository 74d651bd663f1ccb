"""torch tensors taken through DLPack's C exchange table
(python/bindings/dlpack_exchange.h) instead of their `__dlpack__`: the same
values as NumPy inputs give, with `__dlpack__` left uncalled, for every view
the table takes as it is; what it does not take (strided views, subclasses,
complex arrays) still goes the `__dlpack__` way. The CUDA half, the stream
ordering, is in test_gpu_transport.py's side-stream cases."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import required_dir
from tesscpp import Tesseract

pytestmark = [
    pytest.mark.skipif(
        "__dlpack_c_exchange_api__" not in torch.Tensor.__dict__
        and "__c_dlpack_exchange_api__" not in torch.Tensor.__dict__,
        reason="this torch has no DLPack exchange table",
    ),
    pytest.mark.skipif(os.environ.get("TESSCPP_DLPACK_EXCHANGE") == "0", reason="TESSCPP_DLPACK_EXCHANGE=0"),
]


@pytest.fixture(scope="module")
def vectoradd() -> Tesseract:
    return Tesseract.from_library(required_dir("TESSCPP_EXAMPLES_DIR") / "libvectoradd.so")


@pytest.fixture
def dlpack_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts calls of torch.Tensor.__dlpack__."""
    calls: list[int] = []
    original = torch.Tensor.__dlpack__

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "__dlpack__", counted)
    return calls


def result(t: Tesseract, a, b) -> np.ndarray:
    return np.asarray(t.apply({"a": a, "b": b, "s": 2.0})["result"])


def expected(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return (a.detach().numpy() * np.float32(2.0) + b.detach().numpy()).astype(np.float64)


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x,
        lambda x: x[5:15],  # an offset into its storage
        lambda x: x.reshape(4, 5)[1:3].reshape(-1),  # a contiguous view of a 2-d slice
        lambda x: x[:0],  # empty
    ],
    ids=["whole", "offset", "row-slice", "empty"],
)
def test_contiguous_tensors_skip_dunder_dlpack(vectoradd, dlpack_calls, view) -> None:
    a = view(torch.arange(20, dtype=torch.float32))
    b = view(torch.linspace(-1, 1, 20, dtype=torch.float32))
    got = result(vectoradd, a, b)
    assert dlpack_calls == []
    np.testing.assert_array_equal(got, expected(a, b))


def test_a_tensor_that_requires_grad_is_read_by_its_values(vectoradd, dlpack_calls) -> None:
    a = torch.arange(6, dtype=torch.float32, requires_grad=True)
    b = torch.ones(6, dtype=torch.float32)
    np.testing.assert_array_equal(result(vectoradd, a, b), expected(a, b))
    assert dlpack_calls == []


def test_what_the_table_does_not_take_goes_the_dunder_dlpack_way(vectoradd, dlpack_calls) -> None:
    class Marked(torch.Tensor):
        """A subclass: its arrays are exported its own way."""

    strided = torch.arange(30, dtype=torch.float32)[::3]
    sub = torch.arange(10, dtype=torch.float32).as_subclass(Marked)
    b = torch.ones(10, dtype=torch.float32)
    # `b` takes the table; each of the others asks `__dlpack__` itself.
    np.testing.assert_array_equal(result(vectoradd, strided, b), expected(strided, b))
    assert len(dlpack_calls) >= 1
    dlpack_calls.clear()
    np.testing.assert_array_equal(result(vectoradd, sub, b), expected(sub, b))
    assert len(dlpack_calls) >= 1


def test_a_lazily_negated_view_arrives_with_its_sign(vectoradd) -> None:
    """The imaginary part of a conjugate is a view whose memory lacks the
    sign (torch's neg bit); DLPack cannot say so, so it is resolved first."""
    a = torch.tensor([1 + 2j, 3 - 4j, 5 + 6j]).conj().imag
    assert a.is_neg()
    b = torch.zeros(3)
    np.testing.assert_array_equal(result(vectoradd, a, b), [-4.0, 8.0, -12.0])


def test_a_sparse_tensor_is_refused_naming_its_field(vectoradd) -> None:
    """The table refuses sparse tensors; the `__dlpack__` way then says why."""
    with pytest.raises(TypeError, match=r"^inputs\.a: cannot read this array"):
        vectoradd.apply({"a": torch.eye(3)[0].to_sparse(), "b": torch.zeros(3), "s": 1.0})


def test_the_switch_turns_the_table_off(tmp_path) -> None:
    """TESSCPP_DLPACK_EXCHANGE=0 (read once per process): every tensor goes
    the `__dlpack__` way, with the same values."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys, numpy as np, torch\n"
        "from tesscpp import Tesseract\n"
        "calls = []\n"
        "original = torch.Tensor.__dlpack__\n"
        "torch.Tensor.__dlpack__ = lambda self, *a, **k: calls.append(1) or original(self, *a, **k)\n"
        "t = Tesseract.from_library(sys.argv[1])\n"
        "a = torch.arange(8, dtype=torch.float32)\n"
        "out = np.asarray(t.apply({'a': a, 'b': a, 's': 2.0})['result'])\n"
        "assert np.array_equal(out, (3 * np.arange(8)).astype(np.float64)), out\n"
        "print(len(calls))\n"
    )
    library = str(required_dir("TESSCPP_EXAMPLES_DIR") / "libvectoradd.so")
    counts = {}
    for setting in ("0", "1"):
        env = {**os.environ, "TESSCPP_DLPACK_EXCHANGE": setting}
        done = subprocess.run([sys.executable, str(script), library], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        counts[setting] = int(done.stdout.split()[-1])
    assert counts == {"0": 2, "1": 0}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_skip_dunder_dlpack(dlpack_calls) -> None:
    """A CUDA tensor, in process with cuda_ipc, goes through the table too
    and stays on its device: devid hands its input back as its output."""
    devid = Tesseract.from_library(required_dir("TESSCPP_BRIDGE_FIXTURES") / "libdevid.so", gpu_transport="cuda_ipc")
    a = torch.arange(1 << 16, dtype=torch.float32, device="cuda") * 2
    got = devid.apply({"a": a})["c"]
    assert dlpack_calls == []
    got = got if isinstance(got, torch.Tensor) else torch.from_dlpack(got)
    assert got.device == a.device
    torch.testing.assert_close(got, a, rtol=0, atol=0)
