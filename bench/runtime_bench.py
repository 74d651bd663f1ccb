#!/usr/bin/env python3
"""The runtime benchmark: the noop component served by `tesscpp serve` next to
the same no-op Tesseract served by tesseract-core's `tesseract-runtime serve`,
both driven by the same client (tesseract-core's SDK), in one run.

- no-op apply of 1e2 ... 1e7 float64 elements, json+base64 and json+binref
  (binref input and output files on /dev/shm, shared by client and server);
- GET /health throughput at concurrency 1 and 8 with wrk.

Prints a markdown table of medians and ratios (Python runtime / tesscpp).

    .venv/bin/python bench/runtime_bench.py --cli build/release/bin/tesscpp \\
        --examples build/release/examples
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tesseract_core import Tesseract
from tesseract_core.sdk.tesseract import HTTPClient

ROOT = Path(__file__).resolve().parents[1]
NOOP_FIXTURE = ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if requests.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} not healthy after {timeout} s")


def start_tesscpp(cli: str, examples: str, out_dir: Path, in_dir: Path) -> tuple[str, subprocess.Popen]:
    proc = subprocess.Popen(
        [cli, "serve", f"{examples}/libnoop.so", "--port", "0", "--output-path", str(out_dir),
         "--input-path", str(in_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    port = re.search(r":(\d+)$", proc.stdout.readline().strip()).group(1)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    return url, proc


def start_python(out_dir: Path, in_dir: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = dict(os.environ, TESSERACT_API_PATH=str(NOOP_FIXTURE), TESSERACT_NAME="noop",
               TESSERACT_OUTPUT_PATH=str(out_dir), TESSERACT_INPUT_PATH=str(in_dir))
    runtime = Path(sys.executable).parent / "tesseract-runtime"
    proc = subprocess.Popen([str(runtime), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    return url, proc


def client(url: str, fmt: str, out_dir: Path, in_dir: Path) -> Tesseract:
    """tesseract-core's SDK client; binref inputs need its input_path, which
    from_url does not take, so the HTTPClient is made directly."""
    t = Tesseract.from_url(url, server_output_path=str(out_dir))
    if fmt == "json+binref":
        t._client = HTTPClient(url, output_path=str(out_dir), input_path=str(in_dir))
    return t.with_encoding(output_format=fmt)


def time_apply(t: Tesseract, n: int, budget_s: float, max_reps: int) -> float:
    x = np.random.default_rng(0).standard_normal(n)
    out = t.apply({"x": x})  # warm-up, and the result must be right
    assert np.array_equal(out["x"], x), "noop returned something else"
    samples = []
    start = time.perf_counter()
    while len(samples) < max_reps and (len(samples) < 3 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        t.apply({"x": x})
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def wrk(url: str, connections: int, seconds: int) -> float:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (scripts/bootstrap.sh installs it)")
    out = subprocess.run(["wrk", "-t", str(min(connections, 2)), "-c", str(connections), "-d", f"{seconds}s",
                          f"{url}/health"], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def fmt_time(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=str(ROOT / "build/release/bin/tesscpp"))
    ap.add_argument("--examples", default=str(ROOT / "build/release/examples"))
    ap.add_argument("--max-exp", type=int, default=7)
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per measurement (at least 3 calls)")
    ap.add_argument("--wrk-seconds", type=int, default=5)
    args = ap.parse_args()

    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    rows = []
    with tempfile.TemporaryDirectory(dir=shm) as scratch:
        dirs = {}
        for name in ("cpp", "py"):
            dirs[name] = (Path(scratch) / f"{name}-out", Path(scratch) / f"{name}-in")
            for d in dirs[name]:
                d.mkdir()
        cpp_url, cpp = start_tesscpp(args.cli, args.examples, *dirs["cpp"])
        py_url, py = start_python(*dirs["py"])
        try:
            for fmt in ("json+base64", "json+binref"):
                clients = {"cpp": client(cpp_url, fmt, *dirs["cpp"]), "py": client(py_url, fmt, *dirs["py"])}
                for exp in range(2, args.max_exp + 1):
                    n = 10**exp
                    got = {k: time_apply(c, n, args.budget, 2000) for k, c in clients.items()}
                    rows.append((f"apply noop, {fmt}", f"1e{exp} float64", got["cpp"], got["py"]))
                    print(f"{fmt} 1e{exp}: tesscpp {fmt_time(got['cpp'])}, tesseract-runtime "
                          f"{fmt_time(got['py'])}, ratio {got['py'] / got['cpp']:.1f}x", file=sys.stderr)
                    # binref files of finished calls are the client's to delete.
                    for out_dir, _ in dirs.values():
                        for run in out_dir.glob("run_*"):
                            shutil.rmtree(run, ignore_errors=True)
            health = []
            for c in (1, 8):
                health.append((c, wrk(cpp_url, c, args.wrk_seconds), wrk(py_url, c, args.wrk_seconds)))
        finally:
            for p in (cpp, py):
                p.terminate()
                p.wait(10)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"# runtime benchmark, {time.strftime('%Y-%m-%d')} on {cpu}, {os.cpu_count()} cores\n")
    print("Client: tesseract-core 1.15.0 SDK (`Tesseract.from_url(...).with_encoding(...)`), same process, "
          "same inputs; servers: `tesscpp serve libnoop.so` vs `tesseract-runtime serve` (noop fixture), "
          "1 worker each. Median wall time per call.\n")
    print("| work | size | tesscpp | tesseract-runtime | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for work, size, cpp_s, py_s in rows:
        print(f"| {work} | {size} | {fmt_time(cpp_s)} | {fmt_time(py_s)} | {py_s / cpp_s:.1f}x |")
    print("\n| GET /health (wrk) | tesscpp req/s | tesseract-runtime req/s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for c, cpp_rps, py_rps in health:
        print(f"| concurrency {c} | {cpp_rps:,.0f} | {py_rps:,.0f} | {cpp_rps / py_rps:.1f}x |")


if __name__ == "__main__":
    main()
