"""Why transfer_h2d of 1000 x 64 KiB pinned tensors is slower after a 1 GiB
batch (h2d_bench.py's order) than in a process that moves only small batches.

Times the small pinned batch fresh, then after the big batches (pinned and
pageable, as h2d_bench.py moves them), and splits transfer_h2d's time into its
Python walk, the _copy_h2d call and the wait for the copies. Next to it:
torch's .to(non_blocking=True), and torch's copy_ issued on a side stream into
destinations allocated on the current stream (the ordering transfer_h2d
keeps). Medians of 10 after 2 warm-ups, in GB/s or µs per batch.

    python3 bench/probes/h2d_after_big.py
"""

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for h2d_bench
from h2d_bench import rate  # noqa: E402
from tesscpp import _tesscpp  # noqa: E402
from tesscpp import cuda as tcuda  # noqa: E402

device = torch.device("cuda", 0)
torch.empty(1, device=device)
small = [torch.randn(16384).pin_memory() for _ in range(1000)]
NBYTES = sum(t.nbytes for t in small)


def median_s(move, batch):
    """Seconds to move `batch` (h2d_bench.py's median of 10 after 2 warm-ups)."""
    return sum(t.nbytes for t in batch) / rate(move, batch) / 1e9


def split_ours(batch):
    """transfer_h2d's steps, timed apart: walk, _copy_h2d, wait."""
    walks, calls, waits = [], [], []
    for i in range(12):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        copies, dests = [], []
        for x in batch:
            d = torch.empty_like(x, device=device, memory_format=torch.contiguous_format)
            copies.append((x.data_ptr(), d.data_ptr(), x.nbytes))
            dests.append(d)
        t1 = time.perf_counter()
        done = _tesscpp._copy_h2d(copies, 0, torch.cuda.current_stream(device).cuda_stream)
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        done.wait()
        if i >= 2:
            walks.append(t1 - t0)
            calls.append(t2 - t1)
            waits.append(t3 - t2)
    return [statistics.median(v) * 1e6 for v in (walks, calls, waits)]


side = torch.cuda.Stream(device)


def torch_on_side_stream(batch):
    current = torch.cuda.current_stream(device)
    dests = [torch.empty_like(x, device=device) for x in batch]
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for d, x in zip(dests, batch, strict=True):
            d.copy_(x, non_blocking=True)
    current.wait_stream(side)
    return dests


def report(phase):
    rows = {
        "transfer_h2d": median_s(lambda b: tcuda.transfer_h2d(b), small),
        "torch .to(non_blocking)": median_s(lambda b: [t.to(device, non_blocking=True) for t in b], small),
        "torch copy_ on a side stream": median_s(torch_on_side_stream, small),
    }
    for name, s in rows.items():
        print(f"{phase:18} {name:30} {NBYTES / s / 1e9:6.1f} GB/s  {s * 1e6:8.0f} us", flush=True)
    walk, call, wait = split_ours(small)
    print(f"{phase:18} transfer_h2d's steps: walk {walk:.0f} us, _copy_h2d {call:.0f} us, wait {wait:.0f} us")


report("fresh")
big = [torch.randn(64 * 2**20 // 4) for _ in range(16)]
big_pinned = [t.pin_memory() for t in big]
median_s(lambda b: tcuda.transfer_h2d(b), big_pinned)
report("after big pinned")
median_s(lambda b: tcuda.transfer_h2d(b), big)
report("after big pageable")
torch.cuda.synchronize()
for done, _, _ in tcuda._cache.batches:
    done.wait()
tcuda._cache.batches.clear()
del big, big_pinned
torch.cuda.empty_cache()
report("cache cleared")
