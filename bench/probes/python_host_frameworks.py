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


def calls(t: tesscpp.Tesseract, proc: subprocess.Popen, rounds: int) -> str:
    """What went wrong in the rounds of calls, or "" when nothing did."""
    for r in range(rounds):
        for framework, side in CALLS:
            x = torch.full((1 + (r * 997) % 70_000,), float(r % 7), device="cuda")
            y = torch.from_dlpack(t.apply({"x": x, "framework": framework, "side_stream": side})["y"])
            if not torch.equal(y, 2 * x + 1):
                return f"wrong values: round {r}, {framework}, side stream {side}"
            if proc.poll() is not None:
                return f"the server exited: round {r}, {framework}, side stream {side}"
    return ""


def one_server(rounds: int, work: Path) -> tuple[int, str, str]:
    """The server's exit status, what went wrong in the calls ("" if nothing), its stderr."""
    port = free_port()
    env = dict(os.environ, PYTHONFAULTHANDLER="1", TESSCPP_PHASE_TRACE=str(work / "trace.jsonl"),
               TESSERACT_OUTPUT_PATH=str(work), TESSCPP_PYTHON=sys.executable)  # fmt: skip
    command = [os.environ["TESSCPP_CLI"], "serve", str(MODULE), "--port", str(port), "--gpu-transport", "cuda_ipc"]
    url = f"http://127.0.0.1:{port}"
    with open(work / "stderr", "wb") as err:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_healthy(url, proc)
        wrong = calls(tesscpp.Tesseract.from_url(url, gpu_transport="cuda_ipc"), proc, rounds)
    except Exception as e:  # noqa: BLE001 - a crash shows as the call's failure; the status says which
        wrong = f"call failed: {type(e).__name__}: {e}"
    finally:
        if proc.poll() is None:
            proc.terminate()
    status = proc.wait(timeout=30)
    return status, wrong, (work / "stderr").read_text(errors="replace")


def main() -> None:
    servers = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    failures = 0
    start = time.monotonic()
    for i in range(servers):
        status, wrong, stderr = one_server(rounds, Path(tempfile.mkdtemp()))
        noisy = [line for line in stderr.splitlines() if "tesscpp:" in line or "Fatal" in line or "fault" in line]
        ok = status == 0 and not wrong and not noisy
        failures += not ok
        report = "" if ok else f"\n{wrong}\n{stderr[-4000:]}"
        print(f"server {i}: exit status {status}, {rounds * len(CALLS)} calls{report}")
    print(f"{servers - failures} of {servers} servers clean in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
