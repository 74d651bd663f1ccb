#!/usr/bin/env python3
"""What the crash guard costs a call: `tesscpp serve` supervised (the default:
one worker process under a supervisor that answers a crashed worker's calls,
docs/serving.md "Workers that crash") against `--no-supervise` (one process),
for the noop C++ component and the noop Python module, in one run.

Two ways of calling, 100 float64 json+base64 each: a kept-alive connection
(tesscpp's client; what the guard adds per call is two stores into shared
memory), and a fresh connection per call (raw sockets; the guard adds two
messages to the supervisor per connection). Rounds alternate between the two
settings, with two servers of each (one server process can sit well or badly
on 2 cores for a whole run: tens of percent); the table has the median of the
round medians of both servers, their range, and the ratio of the medians.

    .venv/bin/python bench/supervision_bench.py --cli build/ci/bin/tesscpp \\
        --examples build/ci/examples --out bench/results/supervision.md
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tesscpp
from runtime_bench import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py"
SETTINGS = {"supervised": [], "one process": ["--no-supervise"]}


def serve(cli: str, target: str, flags: list[str], out: Path) -> tuple[str, subprocess.Popen]:
    env = dict(os.environ, TESSERACT_NAME="noop", TESSERACT_OUTPUT_PATH=str(out), TESSCPP_PYTHON=sys.executable)
    port = free_port()
    proc = subprocess.Popen([cli, "serve", target, "--port", str(port), *flags], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    return url, proc


def kept_alive(url: str, calls: int) -> float:
    """Median seconds per apply over one kept-alive connection (tesscpp's client)."""
    t = tesscpp.Tesseract.from_url(url).with_encoding(output_format="json+base64")
    x = np.arange(100, dtype=np.float64)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        t.apply({"x": x})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fresh_connections(url: str, calls: int) -> float:
    """Median seconds per apply, each on a new connection (connect, request, read to close)."""
    port = int(url.rsplit(":", 1)[1])
    buffer = base64.b64encode(np.arange(100, dtype=np.float64).tobytes()).decode()
    body = json.dumps({"inputs": {"x": {"object_type": "array", "shape": [100], "dtype": "float64",
                                        "data": {"buffer": buffer, "encoding": "base64"}}}}).encode()  # fmt: skip
    request = (f"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(request)
            while s.recv(65536):
                pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--examples", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    targets = {"C++ noop": f"{args.examples}/libnoop.so", "Python noop": str(MODULE)}
    results: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        for kind, target in targets.items():
            for setting, flags in SETTINGS.items():
                for copy in (1, 2):
                    out = Path(tmp) / f"{kind}-{setting}-{copy}".replace(" ", "_")
                    out.mkdir()
                    servers[kind, setting, copy] = serve(args.cli, target, flags, out)
        try:
            for _ in range(args.rounds):
                for (kind, setting, _copy), (url, _) in servers.items():
                    results.setdefault((kind, setting, "kept-alive"), []).append(kept_alive(url, args.calls))
                    results.setdefault((kind, setting, "fresh"), []).append(fresh_connections(url, args.calls // 4))
        finally:
            for _, proc in servers.values():
                proc.terminate()
                proc.wait(timeout=30)
    lines = [f"# Supervision's cost per call ({args.rounds} rounds, {args.calls} kept-alive calls and "
             f"{args.calls // 4} fresh connections per round and server, two servers per setting)", "",
             f"`{' '.join(sys.argv)}`, commit {_commit()}, {os.cpu_count()} cores", "",
             "| component | connection | supervised µs (range) | one process µs (range) | supervised / one process |",
             "|---|---|---:|---:|---:|"]  # fmt: skip

    def cell(times: list[float]) -> tuple[float, str]:
        micros = [t * 1e6 for t in times]
        median = statistics.median(micros)
        return median, f"{median:.0f} ({min(micros):.0f}-{max(micros):.0f})"

    for kind in targets:
        for how in ("kept-alive", "fresh"):
            guarded, guarded_text = cell(results[kind, "supervised", how])
            plain, plain_text = cell(results[kind, "one process", how])
            lines.append(f"| {kind} | {how} | {guarded_text} | {plain_text} | {guarded / plain:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
