#!/usr/bin/env python3
"""The cuda_vmm benchmark: cuda_ipc apply with the client's tensors in PyTorch's
expandable segments (VMM memory that legacy IPC cannot name), in one run on a
GPU machine.

- devhold: the server reads nothing and returns a device array it holds, so
  the time is the input's transport (and the answer's, legacy memory);
- identity (noop): returns its input, one device copy on the server;
- vmmout (python/tests/fixtures/vmmout): copies its input into VMM memory it
  answers with, so both directions carry VMM memory.

Each is timed three ways, one server at a time:
- tesscpp by reference: tesscpp's client and server, cuda_vmm on (the default);
- tesscpp staged: the same with TESSCPP_CUDA_VMM=0 in the server, so VMM
  memory is copied into a staging buffer on the way, as without the extension;
- tesseract-core: its SDK and runtime (devhold and identity; its Python
  devhold's held array is an expandable segment too), which stage VMM memory.

Timing as bench/gpu_transport_bench.py (medians of --iterations calls in
steady state). Writes the markdown table to --out when given.

    python3 bench/vmm_bench.py --examples build/examples --bench-components build/bench \
        --fixtures build/python/fixtures --out results.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")  # before torch starts CUDA

import torch

import tesscpp
import tesscpp.cuda
from gpu_transport_bench import SIZES, timed_call
from runtime_bench import emit_table, fmt_time

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", required=True, type=Path, help="directory holding libnoop.so")
    parser.add_argument("--bench-components", required=True, type=Path, help="directory holding libdevhold.so")
    parser.add_argument("--fixtures", required=True, type=Path, help="directory holding libvmmout.so")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import tesseract_core

    python_components = {
        "identity": ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py",
        "devhold": ROOT / "bench" / "components" / "devhold" / "tesseract_api.py",
    }
    libraries = {
        "identity": args.examples / "libnoop.so",
        "devhold": args.bench_components / "libdevhold.so",
        "vmmout": args.fixtures / "libvmmout.so",
    }

    def serve(how: str, component: str):
        if how == "tesseract-core":
            server = tesscpp.Tesseract.from_source(
                python_components[component], gpu_transport="cuda_ipc", python_executable=sys.executable,
                python_runtime="tesseract-runtime",
            )
            server.serve()
            sdk = tesseract_core.Tesseract.from_url(server._url).with_encoding(gpu_transport="cuda_ipc")
            return server, lambda x: sdk.apply({"x": x})["x"]
        server = tesscpp.Tesseract.from_source(libraries[component], gpu_transport="cuda_ipc")
        previous = os.environ.pop("TESSCPP_CUDA_VMM", None)
        if how == "tesscpp staged":
            os.environ["TESSCPP_CUDA_VMM"] = "0"  # the server's environment only: ours has its endpoint
        try:
            server.serve()
        finally:
            os.environ.pop("TESSCPP_CUDA_VMM", None)
            if previous is not None:
                os.environ["TESSCPP_CUDA_VMM"] = previous
        name, out = ("a", "c") if component == "vmmout" else ("x", "x")
        return server, lambda x: server.apply({name: x})[out]

    inputs = {label: torch.randn(nbytes // 4, device="cuda") for nbytes, label in SIZES}
    times: dict[tuple[str, str, str], float] = {}
    cases = [
        (how, component)
        for component in ("devhold", "identity", "vmmout")
        for how in ("tesscpp by reference", "tesscpp staged", "tesseract-core")
        if not (component == "vmmout" and how == "tesseract-core")
    ]
    for how, component in cases:
        server, call = serve(how, component)
        before = tesscpp.cuda.transport_counters()
        try:
            for _, label in SIZES:
                samples = timed_call(call, inputs[label], args.iterations, identity=component != "devhold")
                times[(how, component, label)] = statistics.median(samples)
                print(f"{label} {component} {how}: median {fmt_time(times[(how, component, label)])}", flush=True)
        finally:
            server.teardown()
        after = tesscpp.cuda.transport_counters()
        print(f"  counts: { ({k: after[k] - before[k] for k in after if after[k] != before[k]}) }", flush=True)

    gpu = torch.cuda.get_device_name()
    lines = [
        f"cuda_ipc apply with the client's tensors in PyTorch expandable segments ({gpu}; medians)",
        "",
        "| component | size | by reference (cuda_vmm) | staged (TESSCPP_CUDA_VMM=0) | tesseract-core "
        "| staged / by reference | tesseract-core / by reference |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for component in ("devhold", "identity", "vmmout"):
        for _, label in SIZES:
            ref = times[("tesscpp by reference", component, label)]
            staged = times[("tesscpp staged", component, label)]
            core = times.get(("tesseract-core", component, label))
            lines.append(
                f"| {component} | {label} | {fmt_time(ref)} | {fmt_time(staged)} "
                f"| {fmt_time(core) if core else 'n/a'} | {staged / ref:.1f}x "
                f"| {f'{core / ref:.1f}x' if core else 'n/a'} |"
            )
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
