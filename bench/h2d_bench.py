#!/usr/bin/env python3
"""Host-to-device transfer: tesscpp.cuda.transfer_h2d against torch's own
copies, in one run on a GPU machine. Two batches are moved to the GPU: 16
float32 tensors of 64 MiB (1 GiB) and 1000 of 64 KiB (62.5 MiB, many small
tensors, as a data loader's batch); each timing ends when the data is on the device
(torch.cuda.synchronize). Pinned sources: transfer_h2d vs
tensor.to("cuda", non_blocking=True); pageable sources: transfer_h2d vs plain
tensor.to("cuda") and vs tensor.pin_memory().to("cuda", non_blocking=True).
Medians of 10 after 2 warm-ups; writes a markdown table to --out.

    python3 bench/h2d_bench.py --out h2d.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from runtime_bench import emit_table
from tesscpp.cuda import transfer_h2d

# (count, float32 elements per tensor) of each batch
BATCHES = ((16, 64 * 2**20 // 4), (1000, 64 * 2**10 // 4))


def rate(move, batch) -> float:
    """GB/s of moving `batch` with `move` (median of 10 after 2 warm-ups)."""
    nbytes = sum(t.numel() * t.element_size() for t in batch)
    times = []
    for i in range(12):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = move(batch)
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - t0)
        del out
    return nbytes / statistics.median(times) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [f"Host-to-device ({torch.cuda.get_device_name()}; medians of 10)", ""]
    for count, elements in BATCHES:
        pageable = [torch.randn(elements) for _ in range(count)]
        pinned = [t.pin_memory() for t in pageable]
        rows = [
            ("pinned", "tesscpp transfer_h2d", rate(lambda b: transfer_h2d(b), pinned)),
            ("pinned", "torch .to(non_blocking=True)",
             rate(lambda b: [t.to("cuda", non_blocking=True) for t in b], pinned)),
            ("pageable", "tesscpp transfer_h2d", rate(lambda b: transfer_h2d(b), pageable)),
            ("pageable", "torch .to('cuda')", rate(lambda b: [t.to("cuda") for t in b], pageable)),
            ("pageable", "torch .pin_memory().to(non_blocking=True)",
             rate(lambda b: [t.pin_memory().to("cuda", non_blocking=True) for t in b], pageable)),
        ]
        label = f"{count} x {elements * 4 // 2**10} KiB float32"
        for source, name, gbs in rows:
            print(f"{label:24} {source:9} {name:45} {gbs:6.1f} GB/s", flush=True)
        ours = {source: gbs for source, name, gbs in rows if name.startswith("tesscpp")}
        lines += [
            f"{label}:",
            "",
            "| source | method | GB/s | tesscpp / this |",
            "| --- | --- | ---: | ---: |",
        ]
        lines += [f"| {s} | {n} | {g:.1f} | {ours[s] / g:.2f}x |" for s, n, g in rows]
        lines.append("")
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
