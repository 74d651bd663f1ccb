#!/usr/bin/env python3
"""The bridge benchmark: forward + backward of apply_tesseract on vadd64
(c = a + b, float64; a requires grad, loss = c.sum()) in one run:

- tesscpp:   tesscpp.torch.apply_tesseract -> tesscpp.Tesseract (C++ client)
             -> `tesscpp serve` running the C++ vadd64;
- C++:       the same two requests (apply, VJP) from bench/bridge_benchmark,
             the C++ client alone, against the same server;
- reference: tesseract-torch 0.2.0 -> tesseract-core's SDK ->
             `tesseract-runtime serve` running the Python vadd64;
- and, for the split, tesseract-torch over the SDK against `tesscpp serve`;
- control: the C++ client keeping the CPU busy for SPIN_US after each request,
  about what the bridge and torch spend in Python between requests. What this
  costs beyond SPIN_US is the machine's price for a pause between requests
  (the server's thread and the client's CPU go idle and take time to wake; on
  this VM Python code also runs slower right after a blocking call), a floor
  that no bridge code can remove.

json+base64 throughout (the servers' default; `--server-format json` starts
them with json, as a plain `tesscpp serve` or `tesseract-runtime serve` is,
and the clients name no format); run directories on /dev/shm (on disk their creation
dominates small calls). The bridge and the C++ client take turns in blocks, so
that drift of this machine's speed (fresh-page faults vary a lot on a VM)
hits both alike. Prints a markdown table of medians and the ratios.

    .venv/bin/python bench/bridge_bench.py --build build/release
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tesseract_core
import tesseract_torch
import torch

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 10_000_000)
BLOCKS = 3  # turns of (C++ client, bridge) per size
SPIN_US = 100  # the control's CPU work after each request


def clean(scratch: Path) -> None:
    """Run directories pile up one per call; they are the caller's to delete."""
    for run in scratch.glob("*/run_*"):
        shutil.rmtree(run, ignore_errors=True)


def fmt_time(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def forward_backward(apply, tesseract, a0: torch.Tensor, b: torch.Tensor, budget: float) -> list[float]:
    """Seconds of forward + backward rounds for about `budget` seconds (at
    least 3; the first round warms up and checks the answer)."""
    samples = []
    start = time.perf_counter()
    for i in range(2001):
        a = a0.detach().requires_grad_()
        t0 = time.perf_counter()
        out = apply(tesseract, {"a": a, "b": b})
        out["c"].sum().backward()
        elapsed = time.perf_counter() - t0
        if i == 0:
            assert torch.equal(out["c"].detach(), a0 + b) and torch.equal(a.grad, torch.ones_like(a0)), "wrong answer"
            continue
        samples.append(elapsed)
        if len(samples) >= 3 and time.perf_counter() - start > budget:
            break
    return samples


class _Identity(torch.autograd.Function):
    """PyTorch's own floor: a custom function that does no work."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


def torch_floor(n: int = 1000, rounds: int = 2000) -> float:
    """Median seconds of forward + backward through _Identity (sum, backward included)."""
    a0 = torch.zeros(n, dtype=torch.float64)
    samples = []
    for _ in range(rounds):
        a = a0.detach().requires_grad_()
        t0 = time.perf_counter()
        _Identity.apply(a).sum().backward()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


def cpp_client(bench: Path, url: str, n: int, budget: float, spin_us: int = 0) -> float:
    """Median seconds per round of bench/bridge_benchmark."""
    done = subprocess.run(
        [str(bench), "--url", url, "--elements", str(n), "--budget", str(budget), "--spin-us", str(spin_us)],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return json.loads(done.stdout)["p50_s"]


def serve_vadd64(tesscpp, build: Path, output_format: str = "json+base64") -> tuple[Path, object, object]:
    """A scratch directory on /dev/shm, and vadd64 served twice: the C++
    component by `tesscpp serve`, the Python one by `tesseract-runtime serve`
    (also for jax_bridge_bench.py)."""
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(dir=shm))
    (scratch / "ours").mkdir()
    (scratch / "python").mkdir()
    ours_server = tesscpp.Tesseract.from_source(
        build / "bench" / "libvadd64.so",
        output_path=scratch / "ours",
        startup_timeout=120,
        output_format=output_format,
    )
    python_server = tesscpp.Tesseract.from_source(
        ROOT / "bench" / "components" / "vadd64" / "tesseract_api.py",
        output_path=scratch / "python",
        python_executable=sys.executable,
        python_runtime="tesseract-runtime",
        startup_timeout=120,
        output_format=output_format,
    )
    return scratch, ours_server, python_server


def vadd64_clients(tesscpp, ours_server, python_server) -> tuple:
    """tesscpp's client on tesscpp serve, the SDK on tesseract-runtime, the SDK on tesscpp serve."""
    return (tesscpp.Tesseract.from_url(ours_server.url), tesseract_core.Tesseract.from_url(python_server.url),
            tesseract_core.Tesseract.from_url(ours_server.url))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement (at least 3 rounds)")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--server-format", default="json+base64", help="the servers' default output format")
    args = ap.parse_args()
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.torch

    scratch, ours_server, python_server = serve_vadd64(tesscpp, build, args.server_format)
    rows = []
    with ours_server, python_server:
        ours, reference, sdk_on_ours = vadd64_clients(tesscpp, ours_server, python_server)
        for n in args.sizes:
            rng = np.random.default_rng(42)
            a0 = torch.from_numpy(rng.standard_normal(n))
            b = torch.from_numpy(rng.standard_normal(n))
            ours_samples, cpp_medians, control_medians = [], [], []
            bench = build / "bin" / "bridge_benchmark"
            for _ in range(BLOCKS):
                cpp_medians.append(cpp_client(bench, ours_server.url, n, args.budget))
                ours_samples += forward_backward(tesscpp.torch.apply_tesseract, ours, a0, b, args.budget)
                control_medians.append(cpp_client(bench, ours_server.url, n, args.budget, SPIN_US))
                clean(scratch)
            t_ours, t_cpp = float(np.median(ours_samples)), float(np.median(cpp_medians))
            t_control = float(np.median(control_medians))
            t_ref = float(np.median(forward_backward(tesseract_torch.apply_tesseract, reference, a0, b, args.budget)))
            t_split = float(
                np.median(forward_backward(tesseract_torch.apply_tesseract, sdk_on_ours, a0, b, args.budget))
            )
            clean(scratch)
            rows.append((n, t_ours, t_cpp, t_control, t_ref, t_split))
    shutil.rmtree(scratch, ignore_errors=True)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    cores = len(os.sched_getaffinity(0))
    print(f"# bridge benchmark, {time.strftime('%Y-%m-%d', time.gmtime())} on {cpu}, {cores} cores")
    print()
    print(
        f"Forward + backward of apply_tesseract on vadd64 (float64; servers' default format "
        f"{args.server_format}, clients name none), median per round."
    )
    print()
    print(
        f"PyTorch alone, a custom autograd.Function doing no work (forward + sum + backward, 1e3): "
        f"{fmt_time(torch_floor())} per round."
    )
    print()
    print(
        f"Control: the C++ client busy for {SPIN_US} µs after each of its two requests; its excess over "
        f"the C++ client alone plus {2 * SPIN_US} µs is what pauses between requests cost on this machine."
    )
    print()
    print(
        "| elements | tesscpp bridge → C++ client → tesscpp serve | C++ client alone "
        f"| control (C++ client + {SPIN_US} µs per request) "
        "| tesseract-torch → SDK → tesseract-runtime | tesseract-torch → SDK → tesscpp serve "
        "| bridge / C++ client | bridge / control | tesseract-torch+runtime / tesscpp |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, t_ours, t_cpp, t_control, t_ref, t_split in rows:
        print(
            f"| {n:.0e} | {fmt_time(t_ours)} | {fmt_time(t_cpp)} | {fmt_time(t_control)} | {fmt_time(t_ref)} "
            f"| {fmt_time(t_split)} | {t_ours / t_cpp:.2f}x | {t_ours / t_control:.2f}x | {t_ref / t_ours:.1f}x |"
        )


if __name__ == "__main__":
    main()
