#!/usr/bin/env python3
"""The cuda_ipc benchmark: apply of the identity (noop) on a CUDA float32
tensor, in and out, in one run on a GPU machine:

- tesscpp:   tesscpp.Tesseract (C++ client) -> `tesscpp serve --gpu-transport
             cuda_ipc` running the C++ noop;
- reference: tesseract-core 1.15's SDK -> `tesseract-runtime serve` with
             TESSERACT_GPU_TRANSPORT=cuda_ipc running the Python noop;
- host path: tesscpp's client and server with gpu_transport=none
             (json+base64: the tensor goes to the host and back).

Each call ends with the answer adopted by torch (torch.from_dlpack) and is
timed after warm-up; the table holds medians and ratios. Writes the markdown
table to --out when given.

    python3 bench/gpu_transport_bench.py --examples build/examples --out results.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

import tesscpp
from runtime_bench import fmt_time

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((4, "4 B"), (2**20, "1 MiB"), (64 * 2**20, "64 MiB"), (2**30, "1 GiB"))


def median_call(call, x: torch.Tensor, iterations: int) -> float:
    """Median seconds of `call(x)` with the answer adopted by torch (and the
    device idle again), after one call that checks the answer."""
    first = torch.from_dlpack(call(x))
    assert torch.equal(first.to(x.device), x)
    del first
    samples = []
    for _ in range(iterations):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = torch.from_dlpack(call(x))
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
        del y
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", required=True, type=Path, help="directory holding libnoop.so")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import tesseract_core

    ours = tesscpp.Tesseract.from_source(args.examples / "libnoop.so", gpu_transport="cuda_ipc")
    host = tesscpp.Tesseract.from_source(args.examples / "libnoop.so", gpu_transport="none")
    reference_server = tesscpp.Tesseract.from_source(
        ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py",
        gpu_transport="cuda_ipc",
        python_executable=sys.executable,
    )
    rows = []
    with ours, host, reference_server:
        assert ours.resolve_gpu_transport() == "cuda_ipc"
        sdk = tesseract_core.Tesseract.from_url(reference_server._url).with_encoding(gpu_transport="cuda_ipc")
        assert sdk.resolve_gpu_transport() == "cuda_ipc"
        calls = {
            "tesscpp": lambda x: ours.apply({"x": x})["x"],
            "reference": lambda x: sdk.apply({"x": x})["x"],
            "host": lambda x: host.apply({"x": x})["x"],
        }
        health = []
        for _ in range(50):
            t0 = time.perf_counter()
            ours.health()
            health.append(time.perf_counter() - t0)
        print(f"GET /health through the tesscpp client: {fmt_time(statistics.median(health))}", flush=True)
        for nbytes, label in SIZES:
            x = torch.randn(nbytes // 4, device="cuda")
            times = {}
            for name, call in calls.items():
                iterations = 3 if (name == "host" and nbytes >= 64 * 2**20) else 50
                times[name] = median_call(call, x, iterations)
                print(f"{label} {name}: {fmt_time(times[name])}", flush=True)
            rows.append((label, times))
    gpu = torch.cuda.get_device_name()
    lines = [
        f"cuda_ipc apply of the identity, float32 CUDA tensor in and out ({gpu}; medians)",
        "",
        "| size | tesscpp client + server | tesseract-core SDK + runtime | host path (tesscpp, json+base64) "
        "| reference / tesscpp | host / tesscpp |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, t in rows:
        lines.append(
            f"| {label} | {fmt_time(t['tesscpp'])} | {fmt_time(t['reference'])} | {fmt_time(t['host'])} "
            f"| {t['reference'] / t['tesscpp']:.1f}x | {t['host'] / t['tesscpp']:.1f}x |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
