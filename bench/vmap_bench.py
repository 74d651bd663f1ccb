#!/usr/bin/env python3
"""The vmap benchmark: a batch of apply + VJP calls through torch.vmap.

Each round batches `--batch` elements of nap (y = x; apply and the VJP each
sleep `--seconds`) with torch.vmap over apply_tesseract, then backward:
`--batch` applies and `--batch` VJPs. One `tesscpp serve` of the C++ nap with
`--batch` worker processes serves every row:

- tesscpp bridge, vmap_method="sequential" (one call after the other)
- tesscpp bridge, vmap_method="parallel" (the calls of a batch at once)
- tesseract-torch 0.2.0, vmap_method="sequential", over tesseract-core's SDK
  (it has no concurrent method)

Prints a markdown table of medians and the ratios.

    .venv/bin/python bench/vmap_bench.py --build build/release
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import tesseract_core
import tesseract_torch
import torch

ROOT = Path(__file__).resolve().parents[1]


def rounds(apply, tesseract, method: str, batch: int, seconds: float, count: int) -> list[float]:
    """Seconds per round of vmap forward + backward (after one warm-up round
    that also checks the gradient)."""

    def f(x: torch.Tensor) -> torch.Tensor:
        return apply(tesseract, {"x": x, "seconds": seconds}, vmap_method=method)["y"]

    samples = []
    for i in range(count + 1):
        x = torch.ones(batch, 4, dtype=torch.float64, requires_grad=True)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # began/ended differ per element: element 0's is kept
            torch.vmap(f)(x).sum().backward()
        elapsed = time.perf_counter() - t0
        if i == 0:
            assert torch.equal(x.grad, torch.ones_like(x)), "wrong gradient"
        else:
            samples.append(elapsed)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=0.02, help="each apply and each VJP sleeps this long")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.torch

    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(dir=shm))
    server = tesscpp.Tesseract.from_source(
        build / "bench" / "libnap.so",
        output_path=scratch,
        runtime_config={"num_workers": args.batch},
        startup_timeout=120,
    )
    with server:
        ours = tesscpp.Tesseract.from_url(server.url)
        sdk = tesseract_core.Tesseract.from_url(server.url)
        common = (args.batch, args.seconds, args.rounds)
        sequential = float(np.median(rounds(tesscpp.torch.apply_tesseract, ours, "sequential", *common)))
        parallel = float(np.median(rounds(tesscpp.torch.apply_tesseract, ours, "parallel", *common)))
        reference = float(np.median(rounds(tesseract_torch.apply_tesseract, sdk, "sequential", *common)))
    shutil.rmtree(scratch, ignore_errors=True)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    cores = len(os.sched_getaffinity(0))
    print(f"# vmap benchmark, {time.strftime('%Y-%m-%d', time.gmtime())} on {cpu}, {cores} cores")
    print()
    print(
        f"torch.vmap over apply_tesseract, batch of {args.batch}, then backward: {args.batch} applies and "
        f"{args.batch} VJPs of nap, each sleeping {args.seconds * 1e3:.0f} ms, against one `tesscpp serve` "
        f"with {args.batch} workers. Median of {args.rounds} rounds; the sleeps alone take "
        f"{2 * args.batch * args.seconds * 1e3:.0f} ms one after the other, {2 * args.seconds * 1e3:.0f} ms "
        "at full overlap."
    )
    print()
    print(
        "| tesscpp, sequential | tesscpp, parallel | tesseract-torch 0.2.0, sequential "
        "| parallel / tesseract-torch | parallel / sequential |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {sequential * 1e3:.0f} ms | {parallel * 1e3:.0f} ms | {reference * 1e3:.0f} ms "
        f"| {reference / parallel:.1f}x faster | {sequential / parallel:.1f}x faster |"
    )


if __name__ == "__main__":
    main()
