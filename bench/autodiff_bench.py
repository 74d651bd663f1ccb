#!/usr/bin/env python3
"""Derived derivatives against apply, and against an autodiff-native Python
Tesseract, one step of the 1-D viscous Burgers equation at 1e3-1e6 cells:

- examples/burgers_ad: scalar code (tesscpp/autodiff.h: Sacado forward mode,
  ADOL-C reverse mode);
- examples/burgers_array: array code (tesscpp/autodiff_arrays.h: Dr.Jit's
  forward and reverse modes on kernels its LLVM backend compiles);
- bench/components/burgers_jax: the same kernel in JAX, JVP and VJP from
  jax.jvp / jax.vjp under jit (tesseract-core's JAX recipe).

All three run in process (tesscpp.Tesseract.from_library, tesseract_core's
from_tesseract_api), so the times are the endpoints' own, not HTTP's; medians,
the first call untimed (Dr.Jit and JAX compile then) but reported for the
array form, which also runs its VJP from 8 threads at once (--threads) to
show whether derived calls run in parallel. Needs jax and drjit
(scripts/deps/requirements-bench.txt, requirements-dev.txt).

    .venv/bin/python bench/autodiff_bench.py --build build/release

--gpu (a CUDA build, JAX and torch with CUDA): the array form in process on
CUDA tensors (Dr.Jit's CUDA backend, device arrays in and out) against the
JAX kernel's jitted apply, JVP and VJP on device arrays, each call
synchronised.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 10_000, 100_000, 1_000_000)
OUTPUTS = ["u_next", "energy"]


def median_seconds(call, budget: float = 1.0, at_least: int = 3) -> float:
    call()  # warm-up (and JAX's compilation)
    samples = []
    start = time.perf_counter()
    while len(samples) < at_least or (time.perf_counter() - start < budget and len(samples) < 200):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def endpoint_calls(t, inputs: dict, tangent: dict, cotangent: dict) -> list:
    return [
        lambda: t.apply(inputs),
        lambda: t.jacobian_vector_product(inputs, ["u"], OUTPUTS, tangent),
        lambda: t.vector_jacobian_product(inputs, ["u"], OUTPUTS, cotangent),
    ]


def first_call_seconds(calls: list) -> float:
    """apply, JVP and VJP each called once, in a process that has compiled
    nothing for them: Dr.Jit's tracing and kernel compilation (or its kernel
    cache on disk) included."""
    t0 = time.perf_counter()
    for call in calls:
        call()
    return time.perf_counter() - t0


def threaded_seconds(call, threads: int, calls_each: int = 4) -> tuple[float, float]:
    """Seconds for threads x calls_each calls one after another, and spread
    over `threads` threads at once."""
    call()
    t0 = time.perf_counter()
    for _ in range(threads * calls_each):
        call()
    serial = time.perf_counter() - t0
    with ThreadPoolExecutor(threads) as pool:
        t0 = time.perf_counter()
        list(pool.map(lambda _: [call() for _ in range(calls_each)], range(threads)))
        parallel = time.perf_counter() - t0
    return serial, parallel


def fmt(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build/release"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--gpu", action="store_true", help="CUDA arrays: the array form against JAX on the GPU")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.build) / "python"))
    if args.gpu:
        return gpu_main(args)
    import tesseract_core

    import tesscpp

    examples = Path(args.build) / "examples"
    scalar = tesscpp.Tesseract.from_library(examples / "libburgers_ad.so")
    arrays = tesscpp.Tesseract.from_library(examples / "libburgers_array.so")
    jax_tesseract = tesseract_core.Tesseract.from_tesseract_api(ROOT / "bench/components/burgers_jax/tesseract_api.py")
    rows, firsts, threads = [], [], []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        inputs = {"u": rng.standard_normal(n), "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}
        tangent = {"u": rng.standard_normal(n)}
        cotangent = {"u_next": rng.standard_normal(n), "energy": np.float64(1.0)}
        firsts.append(first_call_seconds(endpoint_calls(arrays, inputs, tangent, cotangent)))
        row = [n]
        for t in (scalar, arrays, jax_tesseract):
            row += [median_seconds(call) for call in endpoint_calls(t, inputs, tangent, cotangent)]
        # Same answers (the JAX twin is the oracle here).
        want = jax_tesseract.vector_jacobian_product(inputs, ["u"], OUTPUTS, cotangent)["u"]
        for t in (scalar, arrays):
            got = t.vector_jacobian_product(inputs, ["u"], OUTPUTS, cotangent)["u"]
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        rows.append(row)
        threads.append(threaded_seconds(endpoint_calls(arrays, inputs, tangent, cotangent)[2], args.threads))
        print(f"{n}: " + ", ".join(fmt(v) for v in row[1:]), file=sys.stderr, flush=True)
    print_tables(rows, firsts, threads, args.threads)
    return 0


def print_tables(rows: list, firsts: list, threads: list, thread_count: int) -> None:
    print(f"# autodiff benchmark, {time.strftime('%Y-%m-%d')}\n")
    print("One explicit Burgers step, in process, medians. Scalar form: examples/burgers_ad (Sacado JVP, "
          "ADOL-C VJP); array form: examples/burgers_array (Dr.Jit, LLVM backend); JAX: "
          "bench/components/burgers_jax (jax.jvp, jax.vjp, jit).\n")  # fmt: skip
    print("| cells | scalar apply | JVP | VJP | array apply | JVP | VJP | VJP / apply | JAX apply | JVP | VJP "
          "| JAX VJP / array VJP | JAX VJP / scalar VJP |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, sa, sj, sv, aa, aj, av, ja, jj, jv in rows:
        print(f"| {n:.0e} | {fmt(sa)} | {fmt(sj)} | {fmt(sv)} | {fmt(aa)} | {fmt(aj)} | {fmt(av)} | {av / aa:.1f}x "
              f"| {fmt(ja)} | {fmt(jj)} | {fmt(jv)} | {jv / av:.2f}x | {jv / sv:.2f}x |")  # fmt: skip
    print("\nArray form: the first apply + JVP + VJP at each size (the first size's include tracing and "
          "compiling the kernels, or reading them from Dr.Jit's cache on disk; later sizes reuse them, the "
          "size being a kernel parameter), and its VJP from one thread against "
          f"{thread_count} threads at once ({thread_count} x 4 calls):\n")  # fmt: skip
    calls = thread_count * 4
    print(f"| cells | first apply+JVP+VJP | {calls} VJPs, 1 thread | {calls} VJPs, {thread_count} threads | speed-up |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for (n, *_), first, (serial, parallel) in zip(rows, firsts, threads, strict=True):
        print(f"| {n:.0e} | {fmt(first)} | {fmt(serial)} | {fmt(parallel)} | {serial / parallel:.2f}x |")


def gpu_main(args: argparse.Namespace) -> int:
    """The GPU rows (see the module's docstring)."""
    import jax
    import torch

    import tesscpp

    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, str(ROOT / "bench/components/burgers_jax"))
    from tesseract_api import run as jax_run

    # In process, CUDA tensors stay on the device only with a GPU transport
    # (without one they are copied to the host, as over HTTP).
    arrays = tesscpp.Tesseract.from_library(
        Path(args.build) / "examples" / "libburgers_array.so", gpu_transport="cuda_ipc"
    )
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    rows = []
    for n in args.sizes:
        rows.append([n] + gpu_row(n, arrays, jax_run, gpu))
        print(f"{n}: " + ", ".join(fmt(v) for v in rows[-1][1:]), file=sys.stderr, flush=True)
    print(f"# autodiff benchmark on the GPU, {time.strftime('%Y-%m-%d')}: {torch.cuda.get_device_name(0)}\n")
    print("One explicit Burgers step, in process, CUDA arrays in and out, each call synchronised; medians. "
          "Array form: examples/burgers_array (Dr.Jit's CUDA backend); JAX: the same kernel, jit.\n")  # fmt: skip
    print("| cells | array apply | JVP | VJP | VJP / apply | JAX apply | JVP | VJP | array VJP / JAX VJP |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, aa, aj, av, ja, jj, jv in rows:
        print(f"| {n:.0e} | {fmt(aa)} | {fmt(aj)} | {fmt(av)} | {av / aa:.1f}x | {fmt(ja)} | {fmt(jj)} | {fmt(jv)} "
              f"| {av / jv:.2f}x |")  # fmt: skip
    return 0


def gpu_row(n: int, arrays, jax_run, gpu) -> list[float]:
    """Median seconds of apply, JVP and VJP at n cells: the array form on
    torch CUDA tensors, then JAX on its device arrays."""
    import jax
    import jax.numpy as jnp
    import torch

    rng = np.random.default_rng(0)
    u, t, w = (rng.standard_normal(n) for _ in range(3))
    tu, tt, tw = (torch.tensor(x, device="cuda") for x in (u, t, w))
    inputs = {"u": tu, "nu": 0.05, "dt": 1e-4, "dx": 1e-2, "steps": 1}

    def synced(call):
        def timed():
            out = call()
            torch.cuda.synchronize()
            return out

        return timed

    ours = [
        synced(lambda: arrays.apply(inputs)),
        synced(lambda: arrays.jacobian_vector_product(inputs, ["u"], OUTPUTS, {"u": tt})),
        synced(lambda: arrays.vector_jacobian_product(inputs, ["u"], OUTPUTS, {"u_next": tw, "energy": 1.0})),
    ]
    ju, jt, jw = (jax.device_put(jnp.asarray(x), gpu) for x in (u, t, w))
    ct = {"u_next": jw, "energy": jnp.float64(1.0)}

    def kernel(v):
        return run_both(jax_run, v)

    f = jax.jit(kernel)
    jvp = jax.jit(lambda v, dv: jax.jvp(kernel, (v,), (dv,))[1])
    vjp = jax.jit(lambda v, c: jax.vjp(kernel, v)[1](c)[0])
    theirs = [
        lambda: jax.block_until_ready(f(ju)),
        lambda: jax.block_until_ready(jvp(ju, jt)),
        lambda: jax.block_until_ready(vjp(ju, ct)),
    ]
    got = torch.from_dlpack(ours[2]()["u"]).cpu().numpy()
    np.testing.assert_allclose(got, np.asarray(vjp(ju, ct)), rtol=1e-9, atol=1e-9)
    return [median_seconds(c) for c in ours + theirs]


def run_both(jax_run, u):
    """The JAX kernel at the benchmark's fixed parameters: u_next and energy."""
    return jax_run(u, 0.05, 1e-4, 1e-2, 1)


if __name__ == "__main__":
    sys.exit(main())
