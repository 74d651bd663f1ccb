"""Where a batch of many small tensors loses time on its way to the GPU.

Follows h2d_python_costs.py, whose torch.empty figure kept every destination
alive (7000 of them, so the allocator kept asking the driver for memory) and
timed torch.split once, cold. Here each variant runs in steady state (the
previous loop's tensors freed, best of 7 over 1000 x 64 KiB float32), and three
whole pipelines are timed to the end of the copies, on the same engine
(tesscpp's _copy_h2d), differing only in how the Python side walks the batch
and makes the destinations:

- "per tensor": today's transfer_h2d;
- "lean walk": the same destinations, fewer torch calls per source;
- "one buffer": one device allocation per batch, each destination a view of it.

    python3 bench/probes/h2d_small_batch.py
"""

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for h2d_bench
from h2d_bench import rate  # noqa: E402  (GB/s, median of 10 after 2 warm-ups)
from tesscpp import _tesscpp
from tesscpp.cuda import transfer_h2d

COUNT, ELEMENTS = 1000, 16384
device = torch.device("cuda", 0)
torch.empty(1, device=device)
pageable = [torch.randn(ELEMENTS) for _ in range(COUNT)]
pinned = [x.pin_memory() for x in pageable]



def per_tensor(name, f, data=pageable):
    best = 1e9
    for _ in range(7):
        t0 = time.perf_counter()
        out = [f(x) for x in data]
        best = min(best, (time.perf_counter() - t0) / len(data) * 1e6)
        del out
    print(f"{name}: {best:.2f} us per tensor")


per_tensor("torch.empty on cuda (steady)", lambda x: torch.empty(x.shape, dtype=x.dtype, device=device))
per_tensor("torch.empty_like(device=) (steady)", lambda x: torch.empty_like(x, device=device))
flat = torch.empty(COUNT * ELEMENTS, dtype=torch.float32, device=device)
offsets = [i * ELEMENTS for i in range(COUNT)]
per_tensor("as_strided of one buffer", lambda o: flat.as_strided((ELEMENTS,), (1,), o), offsets)
best = 1e9
for _ in range(7):
    t0 = time.perf_counter()
    views = flat.split_with_sizes([ELEMENTS] * COUNT)
    best = min(best, (time.perf_counter() - t0) / COUNT * 1e6)
print(f"split_with_sizes (steady): {best:.2f} us per view")
per_tensor(
    "isinstance+is_contiguous+data_ptr+nbytes",
    lambda x: isinstance(x, torch.Tensor) and x.is_contiguous() and (x.data_ptr(), x.nbytes),
)
per_tensor("device.type", lambda x: x.device.type)
per_tensor("is_pinned", lambda x: x.is_pinned())
per_tensor("requires_grad+is_conj+is_neg", lambda x: (x.requires_grad, x.is_conj(), x.is_neg()))


def lean(batch, packed):
    """The walk with the fewest torch calls: sources read in place when they
    are plain contiguous CPU tensors; pinned-ness asked of the driver would be
    free in C++, asked of torch here (as today)."""
    sources = []
    for x in batch:
        if not x.is_contiguous():
            x = x.contiguous()
        sources.append(x)
    stream = torch.cuda.current_stream(device)
    if packed:
        total = sum(x.numel() for x in sources)
        buffer = torch.empty(total, dtype=torch.float32, device=device)
        out, copies, offset = [], [], 0
        base = buffer.data_ptr()
        for x in sources:
            n = x.numel()
            out.append(buffer.as_strided(x.shape, x.stride(), offset))
            copies.append((x.data_ptr(), base + offset * 4, n * 4))
            offset += n
    else:
        out = [torch.empty(x.shape, dtype=x.dtype, device=device) for x in sources]
        copies = [(x.data_ptr(), y.data_ptr(), x.nbytes) for x, y in zip(sources, out, strict=True)]
    _tesscpp._copy_h2d(copies, device.index, stream.cuda_stream)
    return out


for label, batch in (("pageable", pageable), ("pinned", pinned)):
    print(
        f"{label}: per tensor (transfer_h2d) {rate(transfer_h2d, batch):.1f} GB/s; "
        f"lean walk {rate(lambda b: lean(b, False), batch):.1f}; "
        f"one buffer {rate(lambda b: lean(b, True), batch):.1f}; "
        f"torch .to(non_blocking) {rate(lambda b: [t.to(device, non_blocking=True) for t in b], batch):.1f}"
    )
