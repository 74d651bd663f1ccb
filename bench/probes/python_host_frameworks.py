"""Whether a Python module on tesscpp's runtime survives torch, CuPy and JAX
calls mixed in one server (stop 43 saw one server crash, once, on a CuPy call
after two torch calls, with TESSCPP_PHASE_TRACE set).

Starts the devscale fixture (2x+1 by the framework the request names) with
`tesscpp serve --gpu-transport cuda_ipc`, faulthandler on and a phase trace,
SERVERS times; each server gets ROUNDS rounds of calls that switch framework and
stream, checked; then SIGTERM and the server's exit status and stderr (a fault
prints the Python stacks of every thread).

    TESSCPP_CLI=.../bin/tesscpp python3 bench/probes/python_host_frameworks.py [SERVERS] [ROUNDS]
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import tesscpp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runtime_bench import free_port, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "python" / "tests" / "fixtures" / "devscale" / "tesseract_api.py"
CALLS = [("torch", False), ("torch", False), ("cupy", False), ("cupy", True), ("torch", True), ("jax", False)]


def one_server(rounds: int, work: Path) -> tuple[int, str]:
    port = free_port()
    env = dict(os.environ, PYTHONFAULTHANDLER="1", TESSCPP_PHASE_TRACE=str(work / "trace.jsonl"),
               TESSERACT_OUTPUT_PATH=str(work), TESSCPP_PYTHON=sys.executable)  # fmt: skip
    err = open(work / "stderr", "wb")
    command = [os.environ["TESSCPP_CLI"], "serve", str(MODULE), "--port", str(port), "--gpu-transport", "cuda_ipc"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        t = tesscpp.Tesseract.from_url(url, gpu_transport="cuda_ipc")
        for r in range(rounds):
            for framework, side in CALLS:
                x = torch.full((1 + (r * 997) % 70_000,), float(r % 7), device="cuda")
                y = torch.from_dlpack(t.apply({"x": x, "framework": framework, "side_stream": side})["y"])
                if not torch.equal(y, 2 * x + 1):
                    return -1, f"wrong values: round {r}, {framework}, side stream {side}"
                if proc.poll() is not None:
                    break
    except Exception as e:  # noqa: BLE001 - a crash shows as the call's failure; the status says which
        print(f"call failed: {type(e).__name__}: {e}")
    if proc.poll() is None:
        proc.terminate()
    status = proc.wait(timeout=30)
    err.close()
    return status, (work / "stderr").read_text(errors="replace")


def main() -> None:
    servers = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    failures = 0
    start = time.monotonic()
    for i in range(servers):
        status, stderr = one_server(rounds, Path(tempfile.mkdtemp()))
        noisy = [line for line in stderr.splitlines() if "tesscpp:" in line or "Fatal" in line or "fault" in line]
        ok = status == 0 and not noisy
        failures += not ok
        print(f"server {i}: exit status {status}, {rounds * len(CALLS)} calls" + ("" if ok else "\n" + stderr[-4000:]))
    print(f"{servers - failures} of {servers} servers clean in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
