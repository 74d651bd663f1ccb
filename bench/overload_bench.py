"""The server under a slow-body attack: 200 connections each declare a 1 GiB
body and send 1 KiB of it. Measured on `tesscpp serve` (one worker) with its
default caps and with none (--max-in-flight 0 --body-budget-mib 0): the
server's RSS growth, GET /health latency (median, p99) on a fresh connection,
and no-op apply throughput and p99 from 4 threads, all while the attack holds.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(cli: Path, library: Path, flags: list[str], tesscpp) -> dict[str, float]:
    proc = subprocess.Popen([cli, "serve", library, "--port", "0", "--output-path", "/tmp/tesscpp-bench-out",
                             *flags], stdout=subprocess.PIPE, text=True)  # fmt: skip
    port = int(re.search(r":(\d+)$", proc.stdout.readline().strip()).group(1))
    attackers = []
    try:
        t = tesscpp.Tesseract.from_url(f"http://127.0.0.1:{port}")
        t.apply({"x": np.arange(4.0)})
        before = rss_mib(proc.pid)
        refused = 0
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n" + b"x" * 1024)
            attackers.append(s)
        time.sleep(1.0)
        for s in attackers:
            s.setblocking(False)
            try:
                refused += s.recv(64).startswith(b"HTTP/1.1 503")
            except BlockingIOError:
                pass
        grown = rss_mib(proc.pid) - before
        health = []
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(200):
                t0 = time.perf_counter()
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                s.recv(4096)
                health.append(time.perf_counter() - t0)
        latencies: list[float] = []
        lock = threading.Lock()
        stop = time.perf_counter() + 3.0

        def work() -> None:
            mine = []
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                t.apply({"x": np.arange(4.0)})
                mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=work) for _ in range(4)]
        began = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - began
        return {"grown": grown, "refused": refused, "health_p50": statistics.median(health),
                "health_p99": percentile(health, 0.99), "rate": len(latencies) / elapsed,
                "apply_p99": percentile(latencies, 0.99)}  # fmt: skip
    finally:
        for s in attackers:
            s.close()
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import tesscpp

    os.makedirs("/tmp/tesscpp-bench-out", exist_ok=True)
    library = build / "examples/libnoop.so"
    runs = {
        "default caps": measure(build / "bin/tesscpp", library, [], tesscpp),
        "no caps": measure(build / "bin/tesscpp", library, ["--max-in-flight", "0", "--body-budget-mib", "0"],
                           tesscpp),  # fmt: skip
    }
    print(f"# Overload: 200 connections declaring 1 GiB and sending 1 KiB, {time.strftime('%Y-%m-%d')}")
    print(f"\n{platform.machine()}, {os.cpu_count()} cores; tesscpp serve noop, one worker.\n")
    print("| server | RSS growth | attackers answered 503 | /health p50 | /health p99 "
          "| apply calls/s (4 threads) | apply p99 |")
    print("|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['grown']:.1f} MiB | {r['refused']} | {r['health_p50'] * 1e6:.0f} µs | "
              f"{r['health_p99'] * 1e6:.0f} µs | {r['rate']:.0f} | {r['apply_p99'] * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
