#!/usr/bin/env python3
"""The JAX bridge benchmark: a jitted forward + backward (jax.value_and_grad,
one apply and one VJP call) through apply_tesseract on vadd64 (c = a + b,
float64; loss = sum(c); gradient with respect to a), in one run:

- tesscpp.jax:   tesscpp.jax.apply_tesseract -> XLA's custom call -> tesscpp's
                 C++ client -> `tesscpp serve` running the C++ vadd64;
- reference:     tesseract-jax 0.4.0 -> tesseract-core's SDK ->
                 `tesseract-runtime serve` running the Python vadd64;
- for the split: tesseract-jax -> SDK -> `tesscpp serve`, and tesscpp.torch
                 (forward + backward of the same loss) -> `tesscpp serve`.

json+base64 throughout (the servers' default), run directories on /dev/shm
(deleted between samples). Prints a markdown table of medians and ratios.

    .venv/bin/python bench/jax_bridge_bench.py --build build/ci
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tesseract_jax
import torch

from bridge_bench import serve_vadd64, vadd64_clients  # noqa: E402

jax.config.update("jax_enable_x64", True)

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 1_000_000)


def fmt_time(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def median_step(step: Callable[[], None], check: Callable[[], None], scratch: Path, budget: float) -> float:
    """Median seconds of `step` over about `budget` seconds (at least 5)."""
    check()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < 5 or (time.perf_counter() - start < budget and len(samples) < 2000):
        t0 = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t0)
        for run in scratch.glob("*/run_*"):
            shutil.rmtree(run, ignore_errors=True)
    return float(np.median(samples))


def jax_step(apply: Callable, tesseract, a: np.ndarray, b: np.ndarray) -> tuple[Callable, Callable]:
    def loss(a, b):
        return jnp.sum(apply(tesseract, {"a": a, "b": b})["c"])

    step = jax.jit(jax.value_and_grad(loss))
    ja, jb = jnp.asarray(a), jnp.asarray(b)

    def run() -> None:
        jax.block_until_ready(step(ja, jb))

    def check() -> None:
        value, grad = step(ja, jb)
        assert np.isclose(float(value), float(np.sum(a + b))) and np.array_equal(np.asarray(grad), np.ones_like(a))

    return run, check


def torch_step(apply: Callable, tesseract, a: np.ndarray, b: np.ndarray) -> tuple[Callable, Callable]:
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)

    def gradient() -> torch.Tensor:
        leaf = ta.detach().requires_grad_()
        apply(tesseract, {"a": leaf, "b": tb})["c"].sum().backward()
        return leaf.grad

    def run() -> None:
        gradient()

    def check() -> None:
        assert torch.equal(gradient(), torch.ones_like(ta))

    return run, check


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = ap.parse_args()
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.jax
    import tesscpp.torch

    assert tesscpp.jax.ffi_available(), "this build has no custom call (no JAX when it was configured)"
    scratch, ours_server, python_server = serve_vadd64(tesscpp, build)
    rows = []
    with ours_server, python_server:
        ours, reference, sdk_on_ours = vadd64_clients(tesscpp, ours_server, python_server)
        for n in args.sizes:
            rng = np.random.default_rng(42)
            a, b = rng.standard_normal(n), rng.standard_normal(n)
            calls = tesscpp.jax.ffi_calls()
            t_ours = median_step(*jax_step(tesscpp.jax.apply_tesseract, ours, a, b), scratch, args.budget)
            assert tesscpp.jax.ffi_calls() > calls, "tesscpp.jax did not run the custom call"
            t_ref = median_step(*jax_step(tesseract_jax.apply_tesseract, reference, a, b), scratch, args.budget)
            t_split = median_step(*jax_step(tesseract_jax.apply_tesseract, sdk_on_ours, a, b), scratch, args.budget)
            t_torch = median_step(*torch_step(tesscpp.torch.apply_tesseract, ours, a, b), scratch, args.budget)
            rows.append((n, t_ours, t_ref, t_split, t_torch))
    shutil.rmtree(scratch, ignore_errors=True)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    print(f"# JAX bridge benchmark, {time.strftime('%Y-%m-%d', time.gmtime())} on {cpu}, "
          f"{len(os.sched_getaffinity(0))} cores, jax {jax.__version__}")  # fmt: skip
    print()
    print("jit(value_and_grad) of sum(apply_tesseract(vadd64, {a, b})['c']) (one apply and one VJP call), "
          "float64, json+base64; median per step.")  # fmt: skip
    print()
    print("| elements | tesscpp.jax → custom call → tesscpp serve | tesseract-jax → SDK → tesseract-runtime "
          "| tesseract-jax → SDK → tesscpp serve | tesscpp.torch → tesscpp serve (fwd + bwd) "
          "| tesseract-jax+runtime / tesscpp.jax | tesscpp.jax / tesscpp.torch |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, t_ours, t_ref, t_split, t_torch in rows:
        print(f"| {n:.0e} | {fmt_time(t_ours)} | {fmt_time(t_ref)} | {fmt_time(t_split)} | {fmt_time(t_torch)} "
              f"| {t_ref / t_ours:.1f}x | {t_ours / t_torch:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
