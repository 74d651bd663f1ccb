#!/usr/bin/env python3
"""Where the time of one array-form call goes on the GPU (examples/burgers_array,
Dr.Jit's CUDA backend, in process with cuda_ipc): times apply and VJP on CUDA
tensors at a given size, each call synchronised, and prints the median of each
phase the runtime marks (TESSCPP_PHASE_TRACE: run directory, capture, the
endpoint itself, ...), next to the same for devid (a CUDA identity: the
runtime's own floor). --drjit-log LEVEL also prints Dr.Jit's log of the last
call from its run log (logging slows the calls).

    python3 bench/probes/drjit_gpu_calls.py --build BUILD [--cells 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

OUTPUTS = ["u_next", "energy"]


def phases(trace: Path, since: int) -> dict[str, float]:
    """Median microseconds per phase of the traces written after line `since`."""
    lines = [json.loads(line) for line in trace.read_text().splitlines()[since:]] if trace.exists() else []
    names = {k for line in lines for k in line["us"]} | {"total"}
    return {
        n: statistics.median(line["total_us"] if n == "total" else line["us"].get(n, 0.0) for line in lines)
        for n in sorted(names)
    }


def us(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1e6:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--drjit-log", help="Dr.Jit's log level (Info, Debug, ...)")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="drjit_probe_"))
    trace = out / "trace.jsonl"
    os.environ["TESSCPP_PHASE_TRACE"] = str(trace)
    if args.drjit_log:
        os.environ["TESSCPP_DRJIT_LOG"] = args.drjit_log
    import numpy as np
    import torch

    import tesscpp

    build = Path(args.build)
    arrays = tesscpp.Tesseract.from_library(
        build / "examples" / "libburgers_array.so", output_path=out, gpu_transport="cuda_ipc"
    )
    devid = tesscpp.Tesseract.from_library(
        build / "python" / "fixtures" / "libdevid.so", output_path=out, gpu_transport="cuda_ipc"
    )
    rng = np.random.default_rng(0)
    u, w = (torch.tensor(rng.standard_normal(args.cells), device="cuda") for _ in range(2))
    inputs = {"u": u, "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}
    u32 = u.float()
    calls = {
        "devid apply": lambda: devid.apply({"a": u32}),
        "array apply": lambda: arrays.apply(inputs),
        "array vjp": lambda: arrays.vector_jacobian_product(inputs, ["u"], OUTPUTS, {"u_next": w, "energy": 1.0}),
    }
    dlpack = []
    for _ in range(args.calls):
        start = time.perf_counter()
        u.__dlpack__(stream=1)
        dlpack.append(time.perf_counter() - start)
    print(
        f"torch's __dlpack__(stream=1) on a CUDA tensor (inputs pay it with TESSCPP_DLPACK_EXCHANGE=0): "
        f"median {us(dlpack)} µs"
    )
    for name, call in calls.items():
        call()  # compiles
        since = len(trace.read_text().splitlines()) if trace.exists() else 0
        times, returned, dropped = [], [], []
        for _ in range(args.calls):
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = call()
            returned.append(time.perf_counter() - start)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            del result
            dropped.append(time.perf_counter() - start)
        result = call()
        where = {k: getattr(v, "device", "host") for k, v in result.items()}
        print(f"{name} at {args.cells} cells: median {us(times)} µs; outputs on {where}")
        print(f"  returned after {us(returned)} µs; dropping the answer {us(dropped)} µs")
        print("  phases (µs, median): " + ", ".join(f"{k} {v:.0f}" for k, v in phases(trace, since).items()))
        logs = sorted(out.glob("run_*/logs/tesseract.log"), key=lambda p: p.stat().st_mtime)
        if args.drjit_log and logs:
            print(f"--- Dr.Jit's log of the last {name} call ---")
            print(logs[-1].read_text()[-6000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
