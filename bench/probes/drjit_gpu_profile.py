#!/usr/bin/env python3
"""What one array-form VJP does on the GPU, next to JAX's (examples/burgers_array
on Dr.Jit's CUDA backend, in process with cuda_ipc; JAX: the same kernel,
jit): torch's profiler (CUPTI, so it sees every library's kernels in the
process) over a few synchronised calls of each, printing per call the kernels
launched with their GPU time, the CUDA runtime and driver calls with their
host time, and the wall time of the call.

    python3 bench/probes/drjit_gpu_profile.py --build BUILD [--cells 1000 1000000]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ["u_next", "energy"]


def profiled(label: str, call, calls: int) -> None:
    """Runs `call` (synchronised) under the profiler and prints what one call did."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(20):
        call()
    walls = []
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            start = time.perf_counter()
            call()
            walls.append(time.perf_counter() - start)
    kernels = collections.defaultdict(list)
    api = collections.defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels[event.name[:70]].append(event.device_time)
        elif event.name.startswith(("cu", "cuda")):
            api[event.name].append(event.cpu_time)
    print(f"== {label}: wall {statistics.median(walls) * 1e6:.0f} µs per call (median of {calls}, profiled)")
    gpu_total = sum(sum(v) for v in kernels.values()) / calls
    print(
        f"   GPU: {sum(len(v) for v in kernels.values()) / calls:.1f} kernels/copies per call, {gpu_total:.1f} µs busy"
    )
    for name, times in sorted(kernels.items(), key=lambda kv: -sum(kv[1])):
        print(f"     {len(times) / calls:4.1f}x {statistics.median(times):7.1f} µs  {name}")
    host_total = sum(sum(v) for v in api.values()) / calls
    print(f"   host CUDA calls: {sum(len(v) for v in api.values()) / calls:.1f} per call, {host_total:.1f} µs")
    for name, times in sorted(api.items(), key=lambda kv: -sum(kv[1])):
        print(f"     {len(times) / calls:4.1f}x {statistics.median(times):7.1f} µs  {name}")


def profile_size(n: int, arrays, jax_run, gpu, calls: int) -> None:
    """Profiles the array form's VJP and JAX's at n cells."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    u, w = rng.standard_normal(n), rng.standard_normal(n)
    tu, tw = torch.tensor(u, device="cuda"), torch.tensor(w, device="cuda")
    inputs = {"u": tu, "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}

    def ours():
        arrays.vector_jacobian_product(inputs, ["u"], OUTPUTS, {"u_next": tw, "energy": 1.0})
        torch.cuda.synchronize()

    vjp = jax.jit(lambda v, c: jax.vjp(lambda x: jax_run(x, 0.05, 1e-4, 1e-2, 1), v)[1](c)[0])
    ju, jw = jax.device_put(jnp.asarray(u), gpu), jax.device_put(jnp.asarray(w), gpu)
    ct = {"u_next": jw, "energy": jnp.float64(1.0)}
    profiled(f"array-form VJP, {n} cells", ours, calls)
    profiled(f"JAX VJP, {n} cells", lambda: jax.block_until_ready(vjp(ju, ct)), calls)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--cells", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    import jax

    import tesscpp

    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, str(ROOT / "bench/components/burgers_jax"))
    from tesseract_api import run as jax_run

    arrays = tesscpp.Tesseract.from_library(
        Path(args.build) / "examples" / "libburgers_array.so", gpu_transport="cuda_ipc"
    )
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    for n in args.cells:
        profile_size(n, arrays, jax_run, gpu, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
