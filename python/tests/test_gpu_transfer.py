"""tesscpp.cuda.transfer_h2d on a GPU (skipped without one)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pytest
import torch

from tesscpp.cuda import transfer_h2d

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@dataclasses.dataclass
class Sample:
    image: torch.Tensor
    label: int


class Pair(NamedTuple):
    left: torch.Tensor
    right: torch.Tensor


def test_nested_batches_arrive_whole():
    batch = {
        "images": [torch.randn(3, 64, 64) for _ in range(4)],
        "pinned": torch.arange(10_000_000, dtype=torch.int64).pin_memory(),
        "big": torch.randn(50_000_000),  # several staging slots
        "sample": Sample(torch.rand(7), label=3),
        "pair": Pair(torch.ones(2, 2, dtype=torch.float16), torch.zeros(0)),
        "strided": torch.arange(100.0).view(10, 10).t(),
        "expanded": torch.arange(3.0).expand(4, 3),
        "conj": torch.randn(5, dtype=torch.complex64).conj(),  # conjugate bit, read lazily
        "neg": torch._neg_view(torch.randn(5)),  # negative bit
        "grad": torch.randn(6, requires_grad=True),
        "already": torch.ones(3, device="cuda"),
        "name": "batch-1",
    }
    out = transfer_h2d(batch)
    torch.cuda.current_stream().synchronize()
    assert out["name"] == "batch-1" and out["already"] is batch["already"]
    assert isinstance(out["sample"], Sample) and out["sample"].label == 3
    assert isinstance(out["pair"], Pair)
    for got, want in [
        *zip(out["images"], batch["images"], strict=True),
        (out["pinned"], batch["pinned"]),
        (out["big"], batch["big"]),
        (out["sample"].image, batch["sample"].image),
        (out["pair"].left, batch["pair"].left),
        (out["pair"].right, batch["pair"].right),
        (out["strided"], batch["strided"]),
        (out["expanded"], batch["expanded"]),
        (out["conj"], batch["conj"]),
        (out["neg"], batch["neg"]),
        (out["grad"], batch["grad"]),
    ]:
        assert got.device.type == "cuda" and got.dtype == want.dtype and got.is_contiguous()
        assert not got.requires_grad and not got.is_conj() and not got.is_neg()
        assert torch.equal(got.cpu(), want.detach().resolve_conj().resolve_neg())


def test_consumer_stream_waits_without_a_host_sync():
    """Work queued on the current stream right after the call sees the data
    (the stream waits on the GPU), batch after batch; and the call never
    synchronises the device: an unrelated stream spinning since before the
    call (~100 ms) is still spinning when it returns (a cudaDeviceSynchronize
    would have waited for it)."""
    source = torch.randn(64 << 20 >> 2)
    pinned = torch.randn(1 << 20).pin_memory()
    unrelated = torch.cuda.Stream()
    for i in range(20):
        source[0] = float(i)
        with torch.cuda.stream(unrelated):
            torch.cuda._sleep(200_000_000)
        out = transfer_h2d({"x": source, "p": pinned})
        still_spinning = not unrelated.query()
        total = out["x"].sum()  # queued at once on the current stream
        assert still_spinning, f"batch {i}: the call waited for work on another stream (a device sync)"
        assert out["x"][0].item() == float(i)
        assert torch.isclose(total.cpu(), source.sum(), rtol=1e-4)
        assert torch.equal(out["p"].cpu(), pinned)
        unrelated.synchronize()


@pytest.mark.parametrize("nbytes", [64 << 10, 4 << 20])  # an arena's source, and one of its own
def test_memory_freed_on_the_consumer_stream_is_not_overwritten_while_read(nbytes):
    """A tensor freed on the current stream while a kernel queued there (after
    a ~100 ms spin) still has to read it: torch may hand its block to the
    next allocation for that stream at once. The copies run on another
    stream, so their destinations must not come from that block: the reader
    sees the old values, and each destination holds the new ones."""
    for _ in range(3):  # the first round may meet a fresh block by chance
        old = torch.full((nbytes // 4,), 1.0, device="cuda")
        torch.cuda._sleep(200_000_000)
        read = old * 1  # queued behind the spin: reads `old` later
        del old
        out = transfer_h2d({"new": torch.full((nbytes // 4,), 2.0)})
        torch.cuda.synchronize()
        assert torch.equal(read, torch.full_like(read, 1.0)), "the copy overwrote memory still being read"
        assert torch.equal(out["new"], torch.full_like(read, 2.0))


def test_small_tensors_share_allocations_without_overlapping():
    """Many small sources of mixed dtypes and sizes (destinations carved out
    of shared per-dtype allocations): each arrives whole, and writing every
    destination leaves the others untouched."""
    dtypes = [torch.float32, torch.float16, torch.int64, torch.uint8, torch.complex64, torch.bool]
    sources = [torch.randint(0, 100, (1 + (7 * i) % 3000,)).to(dtypes[i % len(dtypes)]) for i in range(600)]
    sources += [torch.randn(3, 5).pin_memory(), torch.randn(()), torch.randn(300_000)]  # pinned, 0-d, > 1 MiB
    out = transfer_h2d(sources)
    for i, (x, y) in enumerate(zip(sources, out, strict=True)):
        assert y.device.type == "cuda" and y.dtype == x.dtype and y.shape == x.shape and y.is_contiguous(), i
        assert torch.equal(y.cpu(), x), i
    for i, y in enumerate(out):
        y.fill_(i % 2 == 0 if y.dtype == torch.bool else i % 100)
    for i, y in enumerate(out):
        assert torch.equal(y.cpu(), torch.full_like(sources[i], i % 2 == 0 if y.dtype == torch.bool else i % 100)), i


def test_bad_arguments():
    with pytest.raises(ValueError):
        transfer_h2d({"x": torch.ones(1)}, num_caches=0)
    with pytest.raises(ValueError):
        transfer_h2d({"x": torch.ones(1)}, device="cpu")
