#!/usr/bin/env python3
"""Forward reuse under churn (docs/forward-reuse.md, issue 57): 10 000 train
steps through tesscpp.torch from 8 threads on `tesscpp serve --num-workers 4`,
each step an apply that keeps and a backward that refers to what it kept, on
bench/components/hammerstein_torch (the forward-dominated solver of
forward_reuse_bench.py, N = 300 here: its kept state, LU factors and the
pullback, is about 1.5 MB). It reads what the issue asks of the store: the
hit rate (at least 99 %), the kept bytes within the budget, and the server's
memory flat over the steps.

Every SAMPLE_EVERY steps it samples the server's /metrics (entries, kept
bytes, hits, misses, evictions) and the resident memory of the server and all
its processes (/proc; the Python hosts hold the kept state). Each thread
checks its last step's gradient against a plain VJP without reuse.

    .venv/bin/python bench/forward_reuse_churn.py --build build/ci
    .venv/bin/python bench/forward_reuse_churn.py --build build/ci --steps 400   # a smoke run
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "bench/components/hammerstein_torch/tesseract_api.py"
N = 300
THREADS, WORKERS = 8, 4
BUDGET_MIB = 32  # per worker
SAMPLE_EVERY = 1000  # steps between samples (--sample-every)
METRICS = {
    "entries": "tesscpp_residual_entries",
    "host bytes": 'tesscpp_residual_bytes{memory="host"}',
    "hits": 'tesscpp_residual_lookups_total{outcome="hit"}',
    "misses": 'tesscpp_residual_lookups_total{outcome="miss"}',
    "evicted": 'tesscpp_residual_dropped_total{reason="evicted"}',
    "over budget": 'tesscpp_residual_dropped_total{reason="over_budget"}',
}


def metric_values(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as answer:
        lines = answer.read().decode().splitlines()
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines if line and line[0] != "#"}
    return {name: values.get(series, float("nan")) for name, series in METRICS.items()}


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and every process below it."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            pages = int(Path(f"/proc/{current}/statm").read_text().split()[1])
            tasks = Path(f"/proc/{current}/task").iterdir()
            pending += [int(c) for t in tasks for c in (t / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += pages * 4096
    return total


def server_pid() -> int:
    """The server from_source started: this process's child that serves."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"serve" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return int(child)
    raise RuntimeError("from_source started no server this process can see")


def source(step: int, thread: int) -> np.ndarray:
    x = np.linspace(0.0, 1.0, N)
    return np.sin(2 * np.pi * x) + 0.01 * np.cos(7 * x + thread) + 1e-4 * step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--steps", type=int, default=10_000, help="train steps in all, over the threads")
    ap.add_argument("--sample-every", type=int, default=SAMPLE_EVERY, help="steps between samples")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.build) / "python"))
    import tesscpp
    from tesscpp.torch import apply_tesseract

    per_thread = args.steps // THREADS
    output = Path(tempfile.mkdtemp(prefix="forward_reuse_churn_", dir="/dev/shm"))
    served = tesscpp.Tesseract.from_source(
        MODULE, output_path=output, python_executable=sys.executable, startup_timeout=180,
        runtime_config={"num_workers": WORKERS, "residual_host_mb": BUDGET_MIB},
    )  # fmt: skip
    with served:
        server = server_pid()
        url = served.url
        done = [0]
        lock = threading.Lock()
        samples: list[tuple[int, float, dict[str, float], int]] = []
        started = time.perf_counter()

        def sample() -> None:
            samples.append((done[0], time.perf_counter() - started, metric_values(url), tree_rss(server)))

        def train(thread: int) -> float:
            worst = 0.0
            for step in range(per_thread):
                s = torch.tensor(source(step, thread), requires_grad=True)
                nu = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
                outputs = apply_tesseract(served, {"s": s, "nu": nu})
                (outputs["u"].sum() + outputs["energy"]).backward()
                if step == per_thread - 1:  # against a VJP that asks for no reuse
                    plain = served.vector_jacobian_product(
                        {"s": source(step, thread), "nu": 1.5}, ["s", "nu"], ["u", "energy"],
                        {"u": np.ones(N), "energy": np.float64(1.0)},
                    )  # fmt: skip
                    worst = float(np.max(np.abs(s.grad.numpy() - plain["s"])))
                with lock:
                    done[0] += 1
                    if done[0] % args.sample_every == 0:
                        sample()
            return worst

        sample()
        with ThreadPoolExecutor(THREADS) as pool:
            worst = max(pool.map(train, range(THREADS)))
        elapsed = time.perf_counter() - started
    report(samples, worst, elapsed, args.steps)


def report(samples: list, worst: float, elapsed: float, steps: int) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    arenas = os.environ.get("MALLOC_ARENA_MAX")
    setting = f"; MALLOC_ARENA_MAX={arenas}" if arenas else ""
    print(
        f"<!-- commit {commit.stdout.strip()}; {cpu}, {len(os.sched_getaffinity(0))} cores{setting}; "
        f"bench/forward_reuse_churn.py --steps {steps} -->"
    )
    print(f"# forward reuse under churn: {steps} steps, {THREADS} threads, {WORKERS} workers\n")
    print(f"hammerstein_torch, N = {N}, `--residual-host-mib {BUDGET_MIB}` per worker "
          f"({WORKERS * BUDGET_MIB} MiB in all); {elapsed:.0f} s in all.\n")  # fmt: skip
    print("| steps | s | entries | kept MiB | hits | misses | evicted | over budget | server RSS MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for count, at, m, rss in samples:
        print(f"| {count} | {at:.0f} | {m['entries']:.0f} | {m['host bytes'] / 2**20:.1f} | {m['hits']:.0f} | "
              f"{m['misses']:.0f} | {m['evicted']:.0f} | {m['over budget']:.0f} | {rss / 2**20:.0f} |")  # fmt: skip
    last = samples[-1][2]
    lookups = last["hits"] + last["misses"]
    peak = max(m["host bytes"] for _, _, m, _ in samples)
    print(f"\nhit rate {last['hits'] / lookups:.4f} ({last['hits']:.0f} of {lookups:.0f}; goal >= 0.99); "
          f"kept bytes at most {peak / 2**20:.1f} MiB of {WORKERS * BUDGET_MIB} MiB; server RSS "
          f"{samples[1][3] / 2**20:.0f} MiB at the first sample after the start, {samples[-1][3] / 2**20:.0f} MiB "
          f"at the end; largest gradient difference from a VJP without reuse: {worst:.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
