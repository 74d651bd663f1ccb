"""Where a cuda_ipc call's time goes, the C++ noop against the Python noop on
tesscpp's runtime (issue 33's 4-byte target: the Python noop took 2.9x the C++
one's 243 us on the H200).

Serves each with `tesscpp serve --gpu-transport cuda_ipc` and TESSCPP_PHASE_TRACE
(one file per server; the client's own in a third), makes CALLS calls of a
CUDA float32 tensor of SIZE elements after 100 untimed ones, and prints the
median of each phase, server and client side, and of the whole call.

    TESSCPP_CLI=.../bin/tesscpp TESSCPP_EXAMPLES_DIR=.../examples \\
        python3 bench/probes/gpu_python_phases.py [CALLS] [SIZE]
"""

import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runtime_bench import free_port, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SERVED = {
    "C++ noop": Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / "libnoop.so",
    "Python noop": ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py",
}
scratch = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
os.environ["TESSCPP_PHASE_TRACE"] = str(scratch / "client.jsonl")  # read at this process's first trace
import tesscpp  # noqa: E402


def medians(lines: list[str]) -> dict[str, float]:
    phases = collections.defaultdict(list)
    for line in lines:
        record = json.loads(line)
        if not record["what"].endswith("apply"):
            continue
        phases["total"].append(record["total_us"])
        for name, us in record["us"].items():
            phases[name].append(us)
    return {name: statistics.median(values) for name, values in phases.items()}


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    x = torch.ones(size, device="cuda")
    client_file = scratch / "client.jsonl"
    (scratch / "out").mkdir()
    for name, target in SERVED.items():
        trace = scratch / f"{name.split()[0]}.jsonl"
        port = free_port()
        env = dict(os.environ, TESSCPP_PHASE_TRACE=str(trace), TESSERACT_OUTPUT_PATH=str(scratch / "out"))
        command = [os.environ["TESSCPP_CLI"], "serve", str(target), "--port", str(port), "--gpu-transport", "cuda_ipc"]
        server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, server)
            t = tesscpp.Tesseract.from_url(url, gpu_transport="cuda_ipc")
            for _ in range(100):
                t.apply({"x": x})
            torch.cuda.synchronize()
            trace.write_text("")
            client_file.write_text("")
            walls = []
            for _ in range(calls):
                t0 = time.perf_counter()
                t.apply({"x": x})
                walls.append(time.perf_counter() - t0)
        finally:
            server.terminate()
            server.wait()
        print(f"{name}: {calls} calls of {size} float32, median {statistics.median(walls) * 1e6:.0f} us", flush=True)
        for side, path in (("server", trace), ("client", client_file)):
            phases = medians(path.read_text().splitlines())
            print(f"  {side}: " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()), flush=True)


if __name__ == "__main__":
    main()
