#!/usr/bin/env python3
"""Per-call cost of the Python client and both bridges, two builds taking turns.

For changes to the request path (the client's request building, the bindings,
the runtime): each round runs every case once for the baseline build and once
for the head build, each in a fresh process, and the table shows the medians
of the rounds' medians and their ratio. On a noisy 2-core machine read the
ratio against the spread of the rounds, which the table prints too.

    .venv/bin/python bench/ab_python_calls.py --base /tmp/base/build/ci --head build/ci --rounds 5

Cases (CPU): the in-process client (from_library) and a served one
(from_source, `tesscpp serve`) calling vectoradd at 100 float64 (apply,
jacobian) and univariate's VJP; a torch training step (forward and backward) and a jitted JAX
value-and-grad through univariate, served.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

# One process per build and round: imports the build's package and times each
# case, printing {case: median seconds per call}.
WORKER = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    build, calls = sys.argv[1], int(sys.argv[2])
    from tesscpp import Tesseract

    def median_of(fn):
        fn()  # warm
        times = []
        for _ in range(calls):
            t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
        times.sort()
        return times[len(times) // 2]

    a = np.linspace(0, 1, 100); b = np.linspace(1, 2, 100)
    inputs = {"a": a, "b": b, "s": 2.0}
    out = {}
    point = {"x": 1.5, "y": 2.0}
    local = Tesseract.from_library(f"{build}/examples/libvectoradd.so")
    out["in-process apply"] = median_of(lambda: local.apply(inputs))
    out["in-process jacobian"] = median_of(lambda: local.jacobian(inputs, ["s"], ["result"]))
    rosen_local = Tesseract.from_library(f"{build}/examples/libunivariate.so")
    out["in-process vjp"] = median_of(lambda: rosen_local.vector_jacobian_product(
        point, ["x", "y"], ["result"], {"result": 1.0}))
    with Tesseract.from_source(f"{build}/examples/libvectoradd.so") as served:
        out["served apply"] = median_of(lambda: served.apply(inputs))
    import torch, jax
    from tesscpp.torch import apply_tesseract
    from tesscpp.jax import apply_tesseract as jax_apply
    with Tesseract.from_source(f"{build}/examples/libunivariate.so") as rosen:
        out["served vjp"] = median_of(lambda: rosen.vector_jacobian_product(
            point, ["x", "y"], ["result"], {"result": 1.0}))
        xy = torch.tensor([-1.2, 1.0], dtype=torch.float64, requires_grad=True)
        def torch_step():
            loss = apply_tesseract(rosen, {"x": xy[0], "y": xy[1]})["result"]
            loss.backward()
        out["torch step"] = median_of(torch_step)
        f = jax.jit(jax.value_and_grad(
            lambda x, y: jax_apply(rosen, {"x": x, "y": y})["result"], argnums=(0, 1)))
        out["jax jit value_and_grad"] = median_of(lambda: jax.block_until_ready(f(1.5, 2.0)))
    print(json.dumps(out))
    """
)


def run_once(build: Path, calls: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(build / "python"), TESSCPP_CLI=str(build / "bin" / "tesscpp"))
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(build), str(calls)],
        env=env, capture_output=True, text=True, check=True, timeout=600,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="baseline build directory (ci preset)")
    parser.add_argument("--head", type=Path, required=True, help="head build directory (ci preset)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300, help="timed calls per case and round")
    args = parser.parse_args()
    rounds: dict[str, dict[str, list[float]]] = {"base": {}, "head": {}}
    for r in range(args.rounds):
        order = [("base", args.base), ("head", args.head)] if r % 2 == 0 else [("head", args.head), ("base", args.base)]
        for name, build in order:
            for case, seconds in run_once(build.resolve(), args.calls).items():
                rounds[name].setdefault(case, []).append(seconds)
    print("| case | base µs (rounds) | head µs (rounds) | head / base |")
    print("| --- | --- | --- | ---: |")
    for case, base in rounds["base"].items():
        head = rounds["head"][case]

        def cell(values: list[float]) -> str:
            spread = " ".join(f"{v * 1e6:.0f}" for v in sorted(values))
            return f"{statistics.median(values) * 1e6:.0f} ({spread})"

        print(f"| {case} | {cell(base)} | {cell(head)} | {statistics.median(head) / statistics.median(base):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
