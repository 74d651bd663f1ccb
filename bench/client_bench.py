#!/usr/bin/env python3
"""The client benchmark: tesscpp's C++ client (bench/client_benchmark) and
tesseract-core's SDK making the same no-op applies against the same two servers
(`tesscpp serve` with the noop component, `tesseract-runtime serve` with the
noop fixture), in one run.

- no-op apply of 1e2 ... 1e7 float64 elements in json (to 1e6), json+base64 and
  json+binref (input and output files on /dev/shm, shared by clients and servers);
- the issue's goals: 100 elements through the C++ client and server (p50), and
  256 MiB of float32 in and out via json+base64 and via json+binref with the
  binref pool on /dev/shm, next to the SDK + tesseract-runtime on the same work.

Prints a markdown table of medians and the ratios.

    .venv/bin/python bench/client_bench.py --bench build/release/bin/client_benchmark \\
        --cli build/release/bin/tesscpp --examples build/release/examples
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
from tesseract_core import Tesseract
from tesseract_core.sdk.tesseract import HTTPClient

from runtime_bench import ROOT, client, fmt_time, server_dirs, start_python, start_tesscpp

FORMATS = {"json": 6, "json+base64": 7, "json+binref": 7}  # format -> largest exponent
BIG = 256 * 2**20 // 4  # 256 MiB of float32
POOL_MB = 1024  # spare answer files: room for two of the 256 MiB answers and more


def ours(bench: str, url: str, dirs, fmt: str, *args: str) -> dict[int, float]:
    """p50 seconds per size from the C++ client benchmark."""
    out_dir, in_dir = dirs
    command = [bench, "--url", url, "--format", fmt, "--server-output-path", str(out_dir),
               "--server-input-path", str(in_dir), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800)
    return {row["n"]: row["p50_s"] for row in map(json.loads, done.stdout.splitlines())}


def sdk(t: Tesseract, n: int, budget: float, dtype=np.float64, min_calls: int = 3) -> float:
    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    out = t.apply({"x": x})  # warm-up, and the result must be right
    assert np.array_equal(out["x"], x), "noop returned something else"
    samples = []
    start = time.perf_counter()
    while len(samples) < 2000 and (len(samples) < min_calls or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        t.apply({"x": x})
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


def clean(dirs) -> None:
    """Binref outputs of finished calls are the client's to delete."""
    for out_dir, _ in dirs.values():
        for run in out_dir.glob("run_*"):
            shutil.rmtree(run, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=str(ROOT / "build/release/bin/client_benchmark"))
    ap.add_argument("--cli", default=str(ROOT / "build/release/bin/tesscpp"))
    ap.add_argument("--examples", default=str(ROOT / "build/release/examples"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement (at least 3 calls)")
    args = ap.parse_args()

    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    rows, goals = [], []
    with tempfile.TemporaryDirectory(dir=shm) as scratch:
        dirs = server_dirs(Path(scratch))
        servers = {}
        servers["cpp"] = start_tesscpp(args.cli, args.examples, *dirs["cpp"])
        servers["py"] = start_python(*dirs["py"])
        try:
            for fmt, max_exp in FORMATS.items():
                cells = {}
                for name, (url, _) in servers.items():
                    cells[("ours", name)] = ours(args.bench, url, dirs[name], fmt, "--min-exp", "2", "--max-exp",
                                                 str(max_exp), "--budget", str(args.budget))
                    clean(dirs)
                    sdk_client = client(url, fmt, *dirs[name])
                    cells[("sdk", name)] = {}
                    for exp in range(2, max_exp + 1):
                        cells[("sdk", name)][10**exp] = sdk(sdk_client, 10**exp, args.budget)
                        clean(dirs)
                for exp in range(2, max_exp + 1):
                    n = 10**exp
                    row = [cells[(c, s)][n] for c in ("ours", "sdk") for s in ("cpp", "py")]
                    rows.append((fmt, f"1e{exp}", *row))
                    print(f"{fmt} 1e{exp}: " + ", ".join(fmt_time(v) for v in row), file=sys.stderr)

            # The goals: 256 MiB of float32 in and out.
            cpp_url, py_url = servers["cpp"][0], servers["py"][0]
            big = ["--elements", str(BIG), "--dtype", "float32", "--budget", "3"]
            ours_b64 = ours(args.bench, cpp_url, dirs["cpp"], "json+base64", *big)[BIG]
            ours_binref = ours(args.bench, cpp_url, dirs["cpp"], "json+binref", *big, "--pool")[BIG]
            clean(dirs)
            # The same server with spare answer files prepared ahead (docs/serving.md).
            servers["pooled"] = start_tesscpp(args.cli, args.examples, *dirs["cpp"],
                                              env={"TESSERACT_BINREF_OUTPUT_POOL_MB": str(POOL_MB)})
            ours_pooled = ours(args.bench, servers["pooled"][0], dirs["cpp"], "json+binref", *big, "--pool")[BIG]
            clean(dirs)
            sdk_b64 = sdk(client(py_url, "json+base64", *dirs["py"]), BIG, 3, np.float32)
            clean(dirs)
            pooled = Tesseract.from_url(py_url, server_output_path=str(dirs["py"][0]))
            pooled._client = HTTPClient(py_url, output_path=str(dirs["py"][0]), input_path=str(dirs["py"][1]),
                                        experimental_binref_pool=True)
            sdk_binref = sdk(pooled.with_encoding(output_format="json+binref"), BIG, 3, np.float32)
            clean(dirs)
            small = next(r for r in rows if r[0] == "json+base64" and r[1] == "1e2")
            goals = [
                ("no-op apply, 100 float64, json+base64 (p50)", small[2], small[5], "≤ 150 µs"),
                ("256 MiB float32 in and out, json+base64", ours_b64, sdk_b64, "≤ 0.6 s"),
                ("256 MiB float32 in and out, json+binref on /dev/shm (binref pool)", ours_binref, sdk_binref,
                 "≤ 0.15 s"),
                (f"the same, server with TESSERACT_BINREF_OUTPUT_POOL_MB={POOL_MB}", ours_pooled, sdk_binref,
                 "≤ 0.15 s"),
            ]
        finally:
            for _, proc in servers.values():
                proc.terminate()
                proc.wait(10)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"# client benchmark, {time.strftime('%Y-%m-%d')} on {cpu}, {os.cpu_count()} cores\n")
    print("No-op apply (the noop component / fixture returns its array), float64, median wall time per call "
          "including encoding and decoding. Clients: tesscpp's C++ client (`bench/client_benchmark`) and "
          "tesseract-core 1.15.0's SDK (`Tesseract.from_url(...).with_encoding(...)`); servers: `tesscpp serve` "
          "and `tesseract-runtime serve`, 1 worker each; binref files on /dev/shm. The last column is the whole "
          "Python stack over the whole C++ stack.\n")
    print("| format | elements | C++ client → tesscpp | C++ client → tesseract-runtime | SDK → tesscpp | "
          "SDK → tesseract-runtime | SDK over C++ client (tesscpp server) | SDK+runtime / C++ client+server |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for fmt, size, ours_cpp, ours_py, sdk_cpp, sdk_py in rows:
        print(f"| {fmt} | {size} | {fmt_time(ours_cpp)} | {fmt_time(ours_py)} | {fmt_time(sdk_cpp)} | "
              f"{fmt_time(sdk_py)} | {sdk_cpp / ours_cpp:.1f}x | {sdk_py / ours_cpp:.1f}x |")
    print("\nGoals (C++ client + `tesscpp serve` against tesseract-core SDK + `tesseract-runtime serve`):\n")
    print("| work | C++ client + server | SDK + runtime | ratio | goal |")
    print("| --- | ---: | ---: | ---: | --- |")
    for work, cpp_s, py_s, goal in goals:
        print(f"| {work} | {fmt_time(cpp_s)} | {fmt_time(py_s)} | {py_s / cpp_s:.1f}x | {goal} |")


if __name__ == "__main__":
    main()
