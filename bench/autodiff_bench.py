#!/usr/bin/env python3
"""Derived derivatives against apply, and against an autodiff-native Python
Tesseract: examples/burgers_ad (tesscpp/autodiff.h: Sacado forward mode,
ADOL-C reverse mode) and bench/components/burgers_jax (the same kernel in JAX,
JVP and VJP from jax.jvp / jax.vjp, tesseract-core's JAX recipe), one step of
the 1-D viscous Burgers equation at 1e3-1e6 cells. Both run in process
(tesscpp.Tesseract.from_library, tesseract_core's from_tesseract_api), so the
times are the endpoints' own, not HTTP's; medians, the first call untimed
(JAX compiles then). Needs jax (scripts/deps/requirements-bench.txt).

    .venv/bin/python bench/autodiff_bench.py --build build/release
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 10_000, 100_000, 1_000_000)


def median_seconds(call, budget: float = 1.0, at_least: int = 3) -> float:
    call()  # warm-up (and JAX's compilation)
    samples = []
    start = time.perf_counter()
    while len(samples) < at_least or (time.perf_counter() - start < budget and len(samples) < 200):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def time_endpoints(t, inputs: dict, tangent: dict, cotangent: dict) -> list[float]:
    """Median seconds of apply, JVP and VJP of `t` at `inputs`."""
    outputs = ["u_next", "energy"]
    return [
        median_seconds(lambda: t.apply(inputs)),
        median_seconds(lambda: t.jacobian_vector_product(inputs, ["u"], outputs, tangent)),
        median_seconds(lambda: t.vector_jacobian_product(inputs, ["u"], outputs, cotangent)),
    ]


def fmt(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build/release"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.build) / "python"))
    import tesseract_core

    import tesscpp

    ours = tesscpp.Tesseract.from_library(Path(args.build) / "examples" / "libburgers_ad.so")
    jax_tesseract = tesseract_core.Tesseract.from_tesseract_api(ROOT / "bench/components/burgers_jax/tesseract_api.py")
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        inputs = {"u": rng.standard_normal(n), "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}
        tangent = {"u": rng.standard_normal(n)}
        cotangent = {"u_next": rng.standard_normal(n), "energy": np.float64(1.0)}
        row = [n]
        for t in (ours, jax_tesseract):
            row += time_endpoints(t, inputs, tangent, cotangent)
        # Same answers (the JAX twin is the oracle here).
        a = ours.vector_jacobian_product(inputs, ["u"], ["u_next", "energy"], cotangent)["u"]
        b = jax_tesseract.vector_jacobian_product(inputs, ["u"], ["u_next", "energy"], cotangent)["u"]
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
        rows.append(row)
        print(f"{n}: " + ", ".join(fmt(v) for v in row[1:]), file=sys.stderr, flush=True)

    print(f"# autodiff benchmark, {time.strftime('%Y-%m-%d')}\n")
    print("One explicit Burgers step, in process, medians. tesscpp: examples/burgers_ad (derived: "
          "Sacado JVP, ADOL-C VJP); JAX: bench/components/burgers_jax (jax.jvp, jax.vjp, jit).\n")
    print("| cells | tesscpp apply | JVP | VJP | JVP / apply | VJP / apply | JAX apply | JVP | VJP "
          "| JAX VJP / tesscpp VJP |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, a, j, v, ja, jj, jv in rows:
        print(f"| {n:.0e} | {fmt(a)} | {fmt(j)} | {fmt(v)} | {j / a:.1f}x | {v / a:.1f}x | {fmt(ja)} | {fmt(jj)} "
              f"| {fmt(jv)} | {jv / v:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
