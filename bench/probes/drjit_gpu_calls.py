#!/usr/bin/env python3
"""Where the time of one array-form call goes on the GPU (examples/burgers_array,
Dr.Jit's CUDA backend): times apply and VJP on CUDA tensors at a given size, each
phase synchronised, then prints Dr.Jit's own log of the last calls (kernel
launches, compilations, memory copies), which the runtime captured into the
calls' run logs (TESSCPP_DRJIT_LOG=Debug, set here).

    python3 bench/probes/drjit_gpu_calls.py --build BUILD [--cells 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

OUTPUTS = ["u_next", "energy"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    os.environ["TESSCPP_DRJIT_LOG"] = "Debug"
    import numpy as np
    import torch

    import tesscpp

    out = Path(tempfile.mkdtemp(prefix="drjit_probe_"))
    t = tesscpp.Tesseract.from_library(
        Path(args.build) / "examples" / "libburgers_array.so", output_path=out, gpu_transport="cuda_ipc"
    )
    rng = np.random.default_rng(0)
    u, w = (torch.tensor(rng.standard_normal(args.cells), device="cuda") for _ in range(2))
    inputs = {"u": u, "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}
    calls = {
        "apply": lambda: t.apply(inputs),
        "vjp": lambda: t.vector_jacobian_product(inputs, ["u"], OUTPUTS, {"u_next": w, "energy": 1.0}),
    }
    for name, call in calls.items():
        times = []
        for _ in range(args.calls):
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = call()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        where = {k: getattr(v, "device", "host") for k, v in result.items()}
        print(f"{name} at {args.cells} cells: median {statistics.median(times) * 1e3:.3f} ms, "
              f"first {times[0] * 1e3:.1f} ms; outputs on {where}")  # fmt: skip
        logs = sorted(out.glob("run_*/logs/tesseract.log"), key=lambda p: p.stat().st_mtime)
        if logs:
            print(f"--- Dr.Jit's log of the last {name} call ---")
            print(logs[-1].read_text()[-6000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
