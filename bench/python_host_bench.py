#!/usr/bin/env python3
"""A Python Tesseract on tesscpp's runtime: the noop module
(tests/fixtures/python/noop/tesseract_api.py) served by `tesscpp serve
tesseract_api.py`, next to the same module on tesseract-core's
`tesseract-runtime serve` and the noop C++ component on `tesscpp serve
libnoop.so`, in one run (docs/python-host.md §5).

Each server is called with tesseract-core's SDK and with tesscpp's Python
client: no-op apply of 100, 1e4, 1e6 float64 and 2^26 float32 elements in
json+base64 and json+binref (binref files on /dev/shm, shared by client and
server), medians; then 8 client threads against 4 workers (100 elements,
calls per second). Ratios are against tesseract-runtime with the same client.

    .venv/bin/python bench/python_host_bench.py --cli build/release/bin/tesscpp \\
        --examples build/release/examples --out bench/results/python-host.md
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from tesseract_core import Tesseract
from tesseract_core.sdk.tesseract import HTTPClient

import tesscpp
from runtime_bench import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py"
SIZES = [(100, "float64"), (10_000, "float64"), (1_000_000, "float64"), (1 << 26, "float32")]
SERVERS = ("tesseract-runtime", "tesscpp serve module", "tesscpp serve C++")


def start(kind: str, cli: str, examples: str, out: Path, inp: Path, workers: int) -> tuple[str, subprocess.Popen]:
    env = dict(os.environ, TESSERACT_NAME="noop", TESSERACT_OUTPUT_PATH=str(out), TESSERACT_INPUT_PATH=str(inp),
               TESSCPP_PYTHON=sys.executable)  # fmt: skip
    port = free_port()
    if kind == "tesseract-runtime":
        env["TESSERACT_API_PATH"] = str(MODULE)
        command = [str(Path(sys.executable).parent / "tesseract-runtime"), "serve", "--port", str(port)]
    else:
        target = str(MODULE) if kind == "tesscpp serve module" else f"{examples}/libnoop.so"
        command = [cli, "serve", target, "--port", str(port)]
    command += ["--num-workers", str(workers)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    return url, proc


def make_client(which: str, url: str, fmt: str, out: Path, inp: Path):
    if which == "tesseract-core SDK":
        t = Tesseract.from_url(url, server_output_path=str(out))
        if fmt == "json+binref":
            t._client = HTTPClient(url, output_path=str(out), input_path=str(inp))
        return t.with_encoding(output_format=fmt)
    return tesscpp.Tesseract.from_url(url, server_output_path=str(out), server_input_path=str(inp), output_format=fmt)


def median_apply(t, x: np.ndarray, budget_s: float, out: Path) -> float:
    answer = t.apply({"x": x})
    assert np.array_equal(np.asarray(answer["x"]), x), "noop returned something else"
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < 3 or (time.perf_counter() - start < budget_s and len(samples) < 500):
        t0 = time.perf_counter()
        t.apply({"x": x})
        samples.append(time.perf_counter() - t0)
        # Finished calls' run directories (binref answers) are the client's to
        # delete. Kept, they grew /dev/shm by GBs per row, and memory this VM
        # never touched before costs ~25 ms per 8 MB on first touch (reused
        # pages 2.5 ms): a server measured later paid it, its row 3x slower.
        for run in out.glob("run_*"):
            shutil.rmtree(run, ignore_errors=True)
    return statistics.median(samples)


def throughput(url: str, which: str, out: Path, inp: Path, seconds: float) -> float:
    """Calls per second of 8 threads, one client each, 100 float64 elements."""
    x = np.arange(100, dtype="float64")
    clients = [make_client(which, url, "json+base64", out, inp) for _ in range(8)]
    deadline = time.perf_counter() + seconds

    def loop(t) -> int:
        n = 0
        while time.perf_counter() < deadline:
            t.apply({"x": x})
            n += 1
        return n

    start = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        calls = sum(pool.map(loop, clients))
    return calls / (time.perf_counter() - start)


def fmt_time(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s"


def latency_rows(args, scratch: Path) -> list[str]:
    rows = ["| client | format | elements | " + " | ".join(SERVERS) + " | module: runtime / tesscpp | C++ / module |",
            "|---|---|---|" + "---|" * (len(SERVERS) + 2)]  # fmt: skip
    servers = {}
    for kind in SERVERS:
        out, inp = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
        servers[kind] = (*start(kind, args.cli, args.examples, out, inp, 1), out, inp)
    try:
        for which in ("tesseract-core SDK", "tesscpp client"):
            for fmt in ("json+base64", "json+binref"):
                for n, dtype in SIZES:
                    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
                    t = {k: median_apply(make_client(which, url, fmt, out, inp), x, args.budget, out)
                         for k, (url, _, out, inp) in servers.items()}  # fmt: skip
                    py, mod, cpp = (t[k] for k in SERVERS)
                    rows.append(f"| {which} | {fmt} | {n:.0e} {dtype} | {fmt_time(py)} | {fmt_time(mod)} | "
                                f"{fmt_time(cpp)} | {py / mod:.2f}x | {mod / cpp:.2f}x |")  # fmt: skip
                    print(rows[-1], flush=True)
    finally:
        for _, proc, _, _ in servers.values():
            proc.terminate()
            proc.wait()
    return rows


def throughput_rows(args, scratch: Path) -> list[str]:
    rows = ["", "8 client threads, 4 workers, 100 float64, json+base64 (calls/s):", "",
            "| client | " + " | ".join(SERVERS) + " |", "|---|" + "---|" * len(SERVERS)]  # fmt: skip
    for which in ("tesseract-core SDK", "tesscpp client"):
        rates = []
        for kind in SERVERS:
            out, inp = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
            url, proc = start(kind, args.cli, args.examples, out, inp, 4)
            try:
                rates.append(throughput(url, which, out, inp, args.budget))
            finally:
                proc.terminate()
                proc.wait()
        rows.append(f"| {which} | " + " | ".join(f"{r:.0f}" for r in rates) + " |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=str(ROOT / "build/release/bin/tesscpp"))
    ap.add_argument("--examples", default=str(ROOT / "build/release/examples"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement (at least 3 calls)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    lines = [f"python host benchmark, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
             f"commit {commit.stdout.strip()}", ""]  # fmt: skip
    lines += latency_rows(args, scratch)
    lines += throughput_rows(args, scratch)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    if re.match("/dev/shm", str(scratch)):
        subprocess.run(["rm", "-rf", str(scratch)], check=False)


if __name__ == "__main__":
    main()
