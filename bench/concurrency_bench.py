"""Client concurrency: calls per second through ONE Tesseract object used by
1, 2, 4 and 8 threads, against `tesscpp serve --num-workers 4`, for tesscpp's
client and tesseract-core 1.15's SDK (a requests Session), in one run.

Two components: noop (4 float64 in, the same out: per-call overhead) and nap
(sleeps 20 ms per call: how well calls overlap on the server's workers).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np


def serve(cli: Path, library: Path, workers: int) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    proc = subprocess.Popen([cli, "serve", library, "--port", "0", "--num-workers", str(workers),
                             "--output-path", "/tmp/tesscpp-bench-out"], stdout=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    url = re.search(r"http://\S+", proc.stdout.readline()).group(0)
    return proc, url


def rate(tesseract, inputs: dict, threads: int, seconds: float) -> float:
    """Calls per second of `threads` threads through one object for `seconds`."""
    done = [0] * threads
    stop = time.perf_counter() + seconds

    def work(i: int) -> None:
        while time.perf_counter() < stop:
            tesseract.apply(inputs)
            done[i] += 1

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    began = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(done) / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import tesseract_core

    import tesscpp

    cases = {
        "noop": (build / "examples/libnoop.so", {"x": np.arange(4.0)}),
        "nap 20 ms": (build / "python/fixtures/libnap.so", {"x": np.arange(4.0), "seconds": 0.02}),
    }
    rows = []
    for name, (library, inputs) in cases.items():
        proc, url = serve(build / "bin/tesscpp", library, 4)
        try:
            sides = {
                "tesscpp": tesscpp.Tesseract.from_url(url),
                "tesseract-core": tesseract_core.Tesseract.from_url(url),
            }
            for side in sides.values():
                side.apply(inputs)
            for threads in (1, 2, 4, 8):
                ours = rate(sides["tesscpp"], inputs, threads, args.seconds)
                theirs = rate(sides["tesseract-core"], inputs, threads, args.seconds)
                rows.append((name, threads, ours, theirs))
        finally:
            proc.terminate()
            proc.wait()
    print(f"# Client concurrency: one object, N threads, `tesscpp serve --num-workers 4`, {time.strftime('%Y-%m-%d')}")
    print(f"\n{platform.machine()}, {os.cpu_count()} cores; {args.seconds:g} s per cell.\n")
    print("| component | threads | tesscpp calls/s | tesseract-core calls/s | ratio |")
    print("|---|---|---|---|---|")
    for name, threads, ours, theirs in rows:
        print(f"| {name} | {threads} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f}x |")


if __name__ == "__main__":
    main()
