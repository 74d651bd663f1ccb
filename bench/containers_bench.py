"""Containers: cold start and steady-state latency of a Tesseract image, served
by tesscpp's from_image and by tesseract-core 1.15's, on the same image and
engine, in one run.

- cold start: from_image(...) + serve + the first apply, to the answer (then
  teardown, not timed); each side alternates, `--starts` times.
- steady state: a no-op apply of a 4-element float64 array through the
  published port, median of `--calls` after 20 warm-up calls.

The image is `tesscpp build` of examples/noop. The engine is the one
DOCKER_HOST names, else a private dockerd (scripts/docker/engine.sh).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    from tesseract_core import Tesseract as CoreTesseract

    import tesscpp

    state = build / "docker"
    started = subprocess.run([ROOT / "scripts/docker/engine.sh", "start", state], capture_output=True, text=True,
                             check=True)  # fmt: skip
    os.environ["DOCKER_HOST"] = started.stdout.strip().removeprefix("DOCKER_HOST=")
    tag = "tesscpp-bench-noop:1"
    subprocess.run([build / "bin/tesscpp", "build", build / "examples/libnoop.so", "--tag", tag], check=True,
                   capture_output=True)  # fmt: skip
    x = {"x": np.arange(4.0)}
    sides = {"tesscpp": tesscpp.Tesseract.from_image, "tesseract-core": CoreTesseract.from_image}
    cold: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for _ in range(args.starts):
            for name, from_image in sides.items():
                t0 = time.perf_counter()
                t = from_image(tag)
                t.serve()
                t.apply(x)
                cold[name].append(time.perf_counter() - t0)
                t.teardown()
        steady: dict[str, float] = {}
        for name, from_image in sides.items():
            with from_image(tag) as t:
                for _ in range(20):
                    t.apply(x)
                times = []
                for _ in range(args.calls):
                    t0 = time.perf_counter()
                    t.apply(x)
                    times.append(time.perf_counter() - t0)
                steady[name] = statistics.median(times)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
        subprocess.run([ROOT / "scripts/docker/engine.sh", "stop", state], capture_output=True, check=False)

    ours, theirs = "tesscpp", "tesseract-core"
    print(f"# Containers: from_image of a `tesscpp build` noop image, {time.strftime('%Y-%m-%d')}")
    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"engine {os.environ['DOCKER_HOST']}; {args.starts} cold starts each (alternating), "
          f"median of {args.calls} steady-state calls.\n")  # fmt: skip
    print("| measure | tesscpp | tesseract-core 1.15 | ratio (core / tesscpp) |")
    print("|---|---|---|---|")
    for label, fn in (("cold start + first apply, median", statistics.median), ("cold start, best", min)):
        a, b = fn(cold[ours]), fn(cold[theirs])
        print(f"| {label} | {a * 1e3:.0f} ms | {b * 1e3:.0f} ms | {b / a:.2f}x |")
    a, b = steady[ours], steady[theirs]
    print(f"| no-op apply (4 x float64), median | {a * 1e6:.0f} µs | {b * 1e6:.0f} µs | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
