"""Builds of examples/burgers_array side by side on the CPU, in one process,
taking turns: apply, JVP and VJP at 1e3-1e6 cells, each the median over
rounds of per-round medians, and each build's VJP against the first's.

    PYTHONPATH=build/ci/python .venv/bin/python bench/probes/array_ab_cpu.py ROUNDS \
        base=/tmp/libburgers_array_base.so head=build/ci/examples/libburgers_array.so

A baseline library: compile the baseline's examples/burgers_array/burgers_array.cc
against the baseline's include/ with the flags and link line of build/ci's
burgers_array (build.ninja); the headers are the whole of the array form, so
this build's libtesscpp serves both. Results: bench/results/autodiff-*.md.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from tesscpp import Tesseract

OUTPUTS = ["u_next", "energy"]


def endpoint_calls(inputs: dict, tangent: dict, cotangent: dict) -> dict:
    return {
        "apply": lambda t: t.apply(inputs),
        "jvp": lambda t: t.jacobian_vector_product(inputs, ["u"], OUTPUTS, tangent),
        "vjp": lambda t: t.vector_jacobian_product(inputs, ["u", "nu"], OUTPUTS, cotangent),
    }


def main() -> None:
    rounds = int(sys.argv[1])
    builds = {name: Tesseract.from_library(path) for name, path in (a.split("=", 1) for a in sys.argv[2:])}
    rng = np.random.default_rng(3)
    for n in (1000, 10000, 100000, 1000000):
        inputs = {"u": rng.standard_normal(n), "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}
        tangent = {"u": rng.standard_normal(n)}
        cotangent = {"u_next": rng.standard_normal(n), "energy": np.float64(1.0)}
        calls = endpoint_calls(inputs, tangent, cotangent)
        first = None
        for name, t in builds.items():
            for call in calls.values():  # warm-up: tracing, recording
                call(t)
                call(t)
            vjp = calls["vjp"](t)
            if first is None:
                first = vjp
            else:
                diff = max(float(np.max(np.abs(np.asarray(vjp[k]) - np.asarray(first[k])))) for k in vjp)
                print(f"  {n} cells, {name}: max |VJP - first build's| = {diff:.3g}")
        reps = max(3, min(200, int(2e6 / n)))
        medians = {(name, c): [] for name in builds for c in calls}
        for _ in range(rounds):
            for name, t in builds.items():
                for c, call in calls.items():
                    samples = []
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        call(t)
                        samples.append(time.perf_counter() - t0)
                    medians[(name, c)].append(statistics.median(samples))
        row = f"{n:>8} cells"
        for c in calls:
            row += f" | {c}: " + " ".join(
                f"{name} {statistics.median(medians[(name, c)]) * 1e6:.1f} µs" for name in builds
            )
        print(row, flush=True)


if __name__ == "__main__":
    main()
