#!/usr/bin/env python3
"""The runtime benchmark: the noop component served by `tesscpp serve` next to
the same no-op Tesseract served by tesseract-core's `tesseract-runtime serve`,
in one run.

- through tesseract-core's SDK (the same client for both): no-op apply of
  1e2 ... 1e7 float64 elements, json+base64 and json+binref (binref input and
  output files on /dev/shm, shared by client and server);
- with the client out of the way: GET /health and small no-op applies with
  wrk at concurrency 1 and 8, large ones with pre-encoded bodies.

Prints a markdown table of medians and ratios (Python runtime / tesscpp).

    .venv/bin/python bench/runtime_bench.py --cli build/release/bin/tesscpp \\
        --examples build/release/examples
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
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


def server_dirs(scratch: Path) -> dict[str, tuple[Path, Path]]:
    """An output and an input directory under `scratch` for each server ("cpp", "py")."""
    dirs = {name: (scratch / f"{name}-out", scratch / f"{name}-in") for name in ("cpp", "py")}
    for pair in dirs.values():
        for d in pair:
            d.mkdir()
    return dirs


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


def start_tesscpp(
    cli: str, examples: str, out_dir: Path, in_dir: Path, env: dict[str, str] | None = None
) -> tuple[str, subprocess.Popen]:
    proc = subprocess.Popen(
        [cli, "serve", f"{examples}/libnoop.so", "--port", "0", "--output-path", str(out_dir),
         "--input-path", str(in_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})},
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


def wrk(url: str, connections: int, seconds: int, script: str | None = None) -> tuple[float, float]:
    """(requests/s, median latency in s) of wrk against `url` (GET /health, or the request `script` sets)."""
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (scripts/bootstrap.sh installs it)")
    # One wrk thread: on a small machine a second would take a core from the server.
    cmd = ["wrk", "-t1", "-c", str(connections), "-d", f"{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run([*cmd, f"{url}/health" if script is None else url], capture_output=True, text=True,
                         check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    median = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    return rps, median


def apply_body(n: int) -> bytes:
    """A no-op apply request of n float64 elements, base64-encoded, as the SDK would send it."""
    x = np.random.default_rng(0).standard_normal(n)
    return json.dumps({"inputs": {"x": {"shape": [n], "dtype": "float64",
                                        "data": {"buffer": base64.b64encode(x.tobytes()).decode(),
                                                 "encoding": "base64"}}}}).encode()


def wrk_script(body: bytes, directory: str) -> str:
    path = Path(directory) / f"apply-{len(body)}.lua"
    path.write_text(f"wrk.method = 'POST'\nwrk.path = '/apply?run_id=bench'\nwrk.body = {json.dumps(body.decode())}\n"
                    "wrk.headers['Content-Type'] = 'application/json'\n"
                    "wrk.headers['Accept'] = 'application/json+base64'\n")
    return str(path)


def raw_apply(url: str, body: bytes, budget_s: float) -> float:
    """Median time of a pre-encoded apply over one kept-alive connection, the
    response read but not decoded: what the server costs, plus socket copies."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    samples = []
    start = time.perf_counter()
    while len(samples) < 3 or (time.perf_counter() - start < budget_s and len(samples) < 1000):
        t0 = time.perf_counter()
        conn.request("POST", "/apply?run_id=bench", body,
                     {"Content-Type": "application/json", "Accept": "application/json+base64"})
        response = conn.getresponse()
        response.read()
        assert response.status == 200, response.status
        samples.append(time.perf_counter() - t0)
    conn.close()
    return statistics.median(samples)


def emit_table(lines: list[str], out: Path | None) -> None:
    """Prints a markdown table and writes it to `out` when given."""
    table = "\n".join(lines)
    print(table)
    if out:
        out.write_text(table + "\n")


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
        dirs = server_dirs(Path(scratch))
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
            # Server-dominated work: a C client (wrk) and pre-encoded bodies.
            server_rows = []
            for c in (1, 8):
                cpp_rps, cpp_lat = wrk(cpp_url, c, args.wrk_seconds)
                py_rps, py_lat = wrk(py_url, c, args.wrk_seconds)
                server_rows.append((f"GET /health, wrk c={c}", cpp_rps, py_rps, cpp_lat, py_lat))
            for exp in (2, 4):
                script = wrk_script(apply_body(10**exp), scratch)
                for c in (1, 8):
                    cpp_rps, cpp_lat = wrk(cpp_url, c, args.wrk_seconds, script)
                    py_rps, py_lat = wrk(py_url, c, args.wrk_seconds, script)
                    server_rows.append((f"apply noop 1e{exp} base64, wrk c={c}", cpp_rps, py_rps, cpp_lat, py_lat))
            for exp in range(5, args.max_exp + 1):
                body = apply_body(10**exp)
                cpp_s, py_s = raw_apply(cpp_url, body, args.budget), raw_apply(py_url, body, args.budget)
                server_rows.append((f"apply noop 1e{exp} base64, pre-encoded", 1 / cpp_s, 1 / py_s, cpp_s, py_s))
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
    print("\nThe same servers with the client out of the way: wrk (C, one thread) with a pre-encoded body, and for "
          "large arrays Python's http.client sending a pre-encoded body and reading the response undecoded.\n")
    print("| work | tesscpp req/s | tesseract-runtime req/s | ratio | tesscpp p50 | tesseract-runtime p50 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for work, cpp_rps, py_rps, cpp_lat, py_lat in server_rows:
        print(f"| {work} | {cpp_rps:,.0f} | {py_rps:,.0f} | {cpp_rps / py_rps:.1f}x | {fmt_time(cpp_lat)} | "
              f"{fmt_time(py_lat)} |")


if __name__ == "__main__":
    main()
