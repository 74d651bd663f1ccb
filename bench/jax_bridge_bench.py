#!/usr/bin/env python3
"""The JAX bridge benchmark: a jitted forward + backward (jax.value_and_grad,
one apply and one VJP call) through apply_tesseract on vadd64 (c = a + b,
float64; loss = sum(c); gradient with respect to a), in one run:

- tesscpp.jax:   tesscpp.jax.apply_tesseract -> XLA's custom call -> tesscpp's
                 C++ client -> `tesscpp serve` running the C++ vadd64;
- reference:     tesseract-jax 0.4.0 -> tesseract-core's SDK ->
                 `tesseract-runtime serve` running the Python vadd64;
- for the split: tesseract-jax -> SDK -> `tesscpp serve`, and tesscpp.torch
                 (forward + backward of the same loss) -> `tesscpp serve`.

json+base64 throughout (the servers' default), run directories on /dev/shm
(deleted between samples). Prints a markdown table of medians and ratios.

    .venv/bin/python bench/jax_bridge_bench.py --build build/ci

With --gpu (a CUDA JAX and a CUDA build, on the GPU machine), the same step on
devid (c = a, float32, identity derivatives, never reading the bytes) with
arrays on the device, 4 B to 1 GiB: tesscpp.jax by IPC handle to `tesscpp
serve` (cuda_ipc), tesseract-jax (callback, host copies, SDK) to
tesseract-runtime and to `tesscpp serve`, and tesscpp.torch with CUDA tensors
to `tesscpp serve` (cuda_ipc).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tesseract_jax
import torch

from bridge_bench import serve_vadd64, vadd64_clients  # noqa: E402

jax.config.update("jax_enable_x64", True)

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 1_000_000)
GPU_SIZES = (1, 1 << 10, 1 << 20, 1 << 28)  # float32: 4 B, 4 KiB, 4 MiB, 1 GiB


def fmt_time(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def median_step(
    step: Callable[[], None], check: Callable[[], None], scratch: Path, budget: float, rounds: int = 5
) -> float:
    """Median seconds of `step` over about `budget` seconds (at least `rounds`)."""
    check()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < rounds or (time.perf_counter() - start < budget and len(samples) < 2000):
        t0 = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t0)
        for run in scratch.glob("*/run_*"):
            shutil.rmtree(run, ignore_errors=True)
    return float(np.median(samples))


def jax_step(apply: Callable, tesseract, a: np.ndarray, b: np.ndarray) -> tuple[Callable, Callable]:
    def loss(a, b):
        return jnp.sum(apply(tesseract, {"a": a, "b": b})["c"])

    step = jax.jit(jax.value_and_grad(loss))
    ja, jb = jnp.asarray(a), jnp.asarray(b)

    def run() -> None:
        jax.block_until_ready(step(ja, jb))

    def check() -> None:
        value, grad = step(ja, jb)
        assert np.isclose(float(value), float(np.sum(a + b))) and np.array_equal(np.asarray(grad), np.ones_like(a))

    return run, check


def torch_step(apply: Callable, tesseract, a: np.ndarray, b: np.ndarray) -> tuple[Callable, Callable]:
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)

    def gradient() -> torch.Tensor:
        leaf = ta.detach().requires_grad_()
        apply(tesseract, {"a": leaf, "b": tb})["c"].sum().backward()
        return leaf.grad

    def run() -> None:
        gradient()

    def check() -> None:
        assert torch.equal(gradient(), torch.ones_like(ta))

    return run, check


def gpu_jax_step(apply: Callable, tesseract, a: jax.Array) -> tuple[Callable, Callable]:
    step = jax.jit(jax.value_and_grad(lambda x: jnp.sum(apply(tesseract, {"a": x})["c"])))

    def run() -> None:
        jax.block_until_ready(step(a))

    def check() -> None:
        value, grad = step(a)
        assert next(iter(grad.devices())).platform == "gpu" and bool(jnp.all(grad == 1))
        assert np.isclose(float(value), float(jnp.sum(a)), rtol=1e-3, atol=1e-3)

    return run, check


def gpu_torch_step(apply: Callable, tesseract, a: torch.Tensor) -> tuple[Callable, Callable]:
    def gradient() -> torch.Tensor:
        leaf = a.detach().requires_grad_()
        apply(tesseract, {"a": leaf})["c"].sum().backward()
        torch.cuda.synchronize()
        return leaf.grad

    def run() -> None:
        gradient()

    def check() -> None:
        grad = gradient()
        assert grad.is_cuda and bool((grad == 1).all())

    return run, check


def gpu_main(args: argparse.Namespace, tesscpp, build: Path) -> None:
    """The GPU rows (see the module's docstring)."""
    import tesseract_core

    import tesscpp.cuda

    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    scratch = Path(tempfile.mkdtemp(dir=shm))
    for name in ("ours", "python"):
        (scratch / name).mkdir()
    devid_py = ROOT / "python" / "tests" / "fixtures" / "devid" / "tesseract_api.py"
    ours_server = tesscpp.Tesseract.from_source(
        build / "python" / "fixtures" / "libdevid.so", output_path=scratch / "ours", gpu_transport="cuda_ipc"
    )
    python_server = tesscpp.Tesseract.from_source(
        devid_py,
        output_path=scratch / "python",
        python_executable=sys.executable,
        python_runtime="tesseract-runtime",
        startup_timeout=120,
    )
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    # The header first and each row as it is measured: a run cut off by its
    # time limit still leaves the sizes it finished.
    print(f"# JAX bridge benchmark on the GPU, {time.strftime('%Y-%m-%d', time.gmtime())}: "
          f"{torch.cuda.get_device_name(0)}, jax {jax.__version__}, torch {torch.__version__}")  # fmt: skip
    print()
    print("jit(value_and_grad) of sum(apply_tesseract(devid, {a})['c']) (one apply and one VJP call), float32 "
          "arrays on the device, json+base64 for host arrays; median per step. tesseract-jax rows above "
          f"{args.reference_max_bytes} bytes not run (—).")  # fmt: skip
    print()
    print("| bytes | tesscpp.jax → tesscpp serve (cuda_ipc) | tesseract-jax → SDK → tesseract-runtime "
          "| tesseract-jax → SDK → tesscpp serve | tesscpp.torch → tesscpp serve (cuda_ipc) "
          "| tesseract-jax+runtime / tesscpp.jax | tesscpp.jax / tesscpp.torch | tesscpp.jax arrays staged |",
          flush=True)  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    with ours_server, python_server:
        ours = tesscpp.Tesseract.from_url(ours_server.url)
        reference = tesseract_core.Tesseract.from_url(python_server.url)
        sdk_on_ours = tesseract_core.Tesseract.from_url(ours_server.url)
        for n in args.sizes:
            a = jax.device_put(jnp.asarray(np.random.default_rng(42).standard_normal(n), jnp.float32), gpu)
            big = n * 4 > args.reference_max_bytes
            before = tesscpp.cuda.transport_counters()
            t_ours = median_step(*gpu_jax_step(tesscpp.jax.apply_tesseract, ours, a), scratch, args.budget)
            after = tesscpp.cuda.transport_counters()
            # The share of arrays staged rather than sent by handle (XLA's
            # VMM memory without an FD handle is; docs/jax-bridge.md §3).
            moved = {k: after[k] - before[k] for k in ("legacy_exports", "vmm_exports", "staged_exports")}
            staged = f"{moved['staged_exports']}/{sum(moved.values())}"
            t_ref = t_split = float("nan")
            if not big:
                t_ref = median_step(*gpu_jax_step(tesseract_jax.apply_tesseract, reference, a), scratch, args.budget, 3)
                t_split = median_step(
                    *gpu_jax_step(tesseract_jax.apply_tesseract, sdk_on_ours, a), scratch, args.budget, 3
                )
            ta = torch.from_dlpack(a)
            t_torch = median_step(*gpu_torch_step(tesscpp.torch.apply_tesseract, ours, ta), scratch, args.budget)
            ref, split = (fmt_time(t) if t == t else "—" for t in (t_ref, t_split))
            ratio = f"{t_ref / t_ours:.1f}x" if t_ref == t_ref else "—"
            print(f"| {n * 4} | {fmt_time(t_ours)} | {ref} | {split} | {fmt_time(t_torch)} | {ratio} "
                  f"| {t_ours / t_torch:.2f}x | {staged} |", flush=True)  # fmt: skip
            del a, ta
    shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--sizes", type=int, nargs="+", help=f"elements (default {SIZES}; --gpu: {GPU_SIZES})")
    ap.add_argument("--gpu", action="store_true", help="arrays on a CUDA device (devid)")
    ap.add_argument("--reference-max-bytes", type=int, default=1 << 30, help="--gpu: largest tesseract-jax row")
    args = ap.parse_args()
    build = Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.jax
    import tesscpp.torch

    assert tesscpp.jax.ffi_available(), "XLA refused tesscpp's custom call (see the warning)"
    if args.gpu:
        args.sizes = args.sizes or list(GPU_SIZES)
        gpu_main(args, tesscpp, build)
        return
    args.sizes = args.sizes or list(SIZES)
    scratch, ours_server, python_server = serve_vadd64(tesscpp, build)
    rows = []
    with ours_server, python_server:
        ours, reference, sdk_on_ours = vadd64_clients(tesscpp, ours_server, python_server)
        for n in args.sizes:
            rng = np.random.default_rng(42)
            a, b = rng.standard_normal(n), rng.standard_normal(n)
            calls = tesscpp.jax.ffi_calls()
            t_ours = median_step(*jax_step(tesscpp.jax.apply_tesseract, ours, a, b), scratch, args.budget)
            assert tesscpp.jax.ffi_calls() > calls, "tesscpp.jax did not run the custom call"
            t_ref = median_step(*jax_step(tesseract_jax.apply_tesseract, reference, a, b), scratch, args.budget)
            t_split = median_step(*jax_step(tesseract_jax.apply_tesseract, sdk_on_ours, a, b), scratch, args.budget)
            t_torch = median_step(*torch_step(tesscpp.torch.apply_tesseract, ours, a, b), scratch, args.budget)
            rows.append((n, t_ours, t_ref, t_split, t_torch))
    shutil.rmtree(scratch, ignore_errors=True)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    print(f"# JAX bridge benchmark, {time.strftime('%Y-%m-%d', time.gmtime())} on {cpu}, "
          f"{len(os.sched_getaffinity(0))} cores, jax {jax.__version__}")  # fmt: skip
    print()
    print("jit(value_and_grad) of sum(apply_tesseract(vadd64, {a, b})['c']) (one apply and one VJP call), "
          "float64, json+base64; median per step.")  # fmt: skip
    print()
    print("| elements | tesscpp.jax → custom call → tesscpp serve | tesseract-jax → SDK → tesseract-runtime "
          "| tesseract-jax → SDK → tesscpp serve | tesscpp.torch → tesscpp serve (fwd + bwd) "
          "| tesseract-jax+runtime / tesscpp.jax | tesscpp.jax / tesscpp.torch |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, t_ours, t_ref, t_split, t_torch in rows:
        print(f"| {n:.0e} | {fmt_time(t_ours)} | {fmt_time(t_ref)} | {fmt_time(t_split)} | {fmt_time(t_torch)} "
              f"| {t_ref / t_ours:.1f}x | {t_ours / t_torch:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
