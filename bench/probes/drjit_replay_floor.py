#!/usr/bin/env python3
"""The floor of a Dr.Jit call on its own, without tesscpp: examples/burgers_array's
VJP written in Python Dr.Jit, traced on every call and frozen (dr.freeze, the
recordings tesscpp/autodiff/detail/replay.h replays), next to a frozen function that
launches one trivial kernel. Each call synchronised; medians in µs.

    python3 bench/probes/drjit_replay_floor.py [--backend cuda|llvm]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cuda", choices=["cuda", "llvm"])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    import drjit as dr

    ad = importlib.import_module(f"drjit.{args.backend}.ad")
    F, U = ad.Float64, ad.UInt32  # noqa: N806 - Dr.Jit's type names

    def vjp(u0, w, nu, h, st):
        u = F(u0)
        dr.enable_grad(u)
        n = dr.width(u)
        i, size = dr.arange(U, n), dr.opaque(U, n)
        left, right = dr.select(i == 0, size - 1, i - 1), dr.select(i + 1 == size, 0, i + 1)
        lo, hi = dr.zeros(F, n), dr.zeros(F, n)
        dr.scatter(lo, u, right, mode=dr.ReduceMode.Permute)
        dr.scatter(hi, u, left, mode=dr.ReduceMode.Permute)
        v = u - h * dr.select(u > 0, u * (u - lo) / st, u * (hi - u) / st) + h * nu * (hi - 2 * u + lo) / (st * st)
        dr.eval(v)
        e = dr.sum(0.5 * v * v * st)
        dr.accum_grad(v, w)
        dr.enqueue(dr.ADMode.Backward, v)
        dr.accum_grad(e, F(1.0))
        dr.enqueue(dr.ADMode.Backward, e)
        dr.traverse(dr.ADMode.Backward)
        g = dr.grad(u)
        dr.eval(g)
        return g

    def one_kernel(x):
        y = x + 1
        dr.eval(y)
        return y

    def median_us(call) -> float:
        for _ in range(3):
            call()
            dr.sync_thread()
        samples = []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            call()
            dr.sync_thread()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples) * 1e6

    frozen_vjp, frozen_one = dr.freeze(vjp), dr.freeze(one_kernel)

    def row(n: int) -> str:
        u, w = dr.arange(F, n) / n - 0.5, dr.full(F, 1.0, n)
        dr.eval(u, w)
        nu, h, st = dr.opaque(F, 0.05), dr.opaque(F, 1e-4), dr.opaque(F, 1e-2)
        return (
            f"{args.backend} {n} cells: traced VJP {median_us(lambda: vjp(u, w, nu, h, st)):.0f}, "
            f"frozen VJP {median_us(lambda: frozen_vjp(u, w, nu, h, st)):.0f}, "
            f"frozen one-kernel function {median_us(lambda: frozen_one(u)):.0f}, "
            f"sync alone {median_us(lambda: None):.0f}"
        )

    for n in (1_000, 1_000_000):
        print(row(n), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
