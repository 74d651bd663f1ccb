#!/usr/bin/env python3
"""The cuda_ipc benchmark: apply on a CUDA float32 tensor, in and out, in one
run on a GPU machine, for two components:

- identity (noop): returns its input. Returning an input as a new array takes
  one device copy somewhere (tesscpp: the server stages the borrowed input;
  tesseract-core: both importers copy), timed alone as "torch copy";
- devhold (bench/components/devhold): returns a device array it holds, so the
  time is the transport's alone.

and a third, Python only:
- devscale (python/tests/fixtures/devscale): y = 2 x + 1 computed by torch on
  the device, a Python component doing real work there.

Each is served these ways, one server at a time (another process holding a CUDA
context on the GPU slows every call):
- tesscpp:    tesscpp.Tesseract (C++ client) -> `tesscpp serve --gpu-transport
              cuda_ipc` running the C++ component (inputs and outputs borrowed
              in place, docs/gpu-transport-protocol.md 11);
- tesscpp-py: the same client and server running the Python component
              (`tesscpp serve tesseract_api.py`, docs/python-host.md);
- reference:  tesseract-core 1.15's SDK -> `tesseract-runtime serve` with
              TESSERACT_GPU_TRANSPORT=cuda_ipc running the Python component;
- host path (identity only): tesscpp's client and server with
              gpu_transport=none (json+base64: the tensor goes to the host and back).

Each call ends with the answer adopted by torch (torch.from_dlpack) and is
timed in steady state: after untimed calls for at least 0.5 s and a fifth as
many as are timed (the first calls after a pause run at idle clocks and pay
one-time mappings); the table holds
medians and ratios, the log also the 90th percentiles. Writes the markdown
table to --out when given.

    python3 bench/gpu_transport_bench.py --examples build/examples --bench-components build/bench --out results.md

--only tesscpp times tesscpp's cuda_ipc rows alone (for repeated runs).
--phases FILE instead breaks tesscpp's calls (or, with --only tesscpp-py, the
Python module's) down by phase: the client and the
server write each call's phases to FILE (TESSCPP_PHASE_TRACE,
src/platform/phase_trace.h) and the medians per phase are printed; the
tracing itself costs about a microsecond per mark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

import tesscpp
from runtime_bench import emit_table, fmt_time

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((4, "4 B"), (2**20, "1 MiB"), (64 * 2**20, "64 MiB"), (2**30, "1 GiB"))


def timed_synchronised(step, iterations: int, warm_up_s: float = 0.5) -> list[float]:
    """Sorted seconds of `step()` from an idle device to an idle device again,
    after untimed calls for `warm_up_s` and at least iterations // 5 of them
    (what it returns is dropped after the clock stops)."""
    samples = []
    warm_until = time.perf_counter() + warm_up_s
    untimed = 0
    while len(samples) < iterations:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = step()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        del result
        if untimed < iterations // 5 or t0 < warm_until:
            untimed += 1
        else:
            samples.append(t1 - t0)
    return sorted(samples)


def timed_call(call, x: torch.Tensor, iterations: int, identity: bool) -> list[float]:
    """timed_synchronised of `call(x)` with the answer adopted by torch, after
    one call that checks the answer."""
    first = torch.from_dlpack(call(x))
    assert first.shape == x.shape and first.dtype == x.dtype
    assert not identity or torch.equal(first.to(x.device), x)
    del first
    return timed_synchronised(lambda: torch.from_dlpack(call(x)), iterations)


def mark_phases(path: Path, case: str) -> None:
    """Starts a case in the trace file: the lines after it belong to it."""
    with path.open("a") as f:
        f.write(json.dumps({"case": case}) + "\n")


def print_phases(path: Path) -> None:
    """Median µs per phase, per case and side, over the timed calls (the
    first fifth of each case, untimed warm-up in the benchmark, is skipped)."""
    cases: dict[str, dict[str, list[dict]]] = {}
    case = None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "case" in record:
            case = record["case"]
            cases[case] = {}
        elif case is not None and record["what"] in ("apply", "/apply"):
            cases[case].setdefault(record["side"], []).append(record)
    for case, sides in cases.items():
        print(f"phases of {case} (median µs):")
        for side, records in sides.items():
            records = records[len(records) // 5 :]
            phases = list(dict.fromkeys(name for r in records for name in r["us"]))  # in the order they ran
            medians = {name: statistics.median(r["us"].get(name, 0.0) for r in records) for name in phases}
            total = statistics.median(r["total_us"] for r in records)
            print(f"  {side:6} total {total:8.1f}  " + "  ".join(f"{n} {v:.1f}" for n, v in medians.items()))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", required=True, type=Path, help="directory holding libnoop.so")
    parser.add_argument("--bench-components", required=True, type=Path, help="directory holding libdevhold.so")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", choices=["tesscpp", "tesscpp-py"], help="time one client's cuda_ipc rows only")
    parser.add_argument("--phases", type=Path, help="write phase traces here and print their medians")
    args = parser.parse_args()
    if args.phases:
        # Read once per process, by this client and by the servers it starts.
        os.environ["TESSCPP_PHASE_TRACE"] = str(args.phases)
        args.phases.unlink(missing_ok=True)
        args.only = args.only or "tesscpp"

    import tesseract_core

    python_components = {
        "identity": ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py",
        "devhold": ROOT / "bench" / "components" / "devhold" / "tesseract_api.py",
        "devscale": ROOT / "python" / "tests" / "fixtures" / "devscale" / "tesseract_api.py",
    }
    libraries = {"identity": args.examples / "libnoop.so", "devhold": args.bench_components / "libdevhold.so"}

    def serve(client: str, component: str):
        """The served Tesseract and the call that applies it to x."""
        output = "y" if component == "devscale" else "x"
        if client == "reference":
            server = tesscpp.Tesseract.from_source(
                python_components[component], gpu_transport="cuda_ipc", python_executable=sys.executable,
                python_runtime="tesseract-runtime",
            )
            server.serve()
            sdk = tesseract_core.Tesseract.from_url(server._url).with_encoding(gpu_transport="cuda_ipc")
            assert sdk.resolve_gpu_transport() == "cuda_ipc"
            return server, lambda x: sdk.apply({"x": x})[output]
        transport = "none" if client == "host" else "cuda_ipc"
        source = python_components[component] if client == "tesscpp-py" else libraries[component]
        server = tesscpp.Tesseract.from_source(source, gpu_transport=transport)
        server.serve()
        assert server.resolve_gpu_transport() == transport
        return server, lambda x: server.apply({"x": x})[output]

    inputs = {label: torch.randn(nbytes // 4, device="cuda") for nbytes, label in SIZES}
    times = {label: {"copy": statistics.median(timed_synchronised(x.clone, 50))} for label, x in inputs.items()}
    # One server at a time, as a user runs one: every process that holds a CUDA
    # context on the GPU, idle or not, slows the others' calls (it measured
    # 273 -> 487 us for a 4-byte call with three more servers alive).
    keys = [("tesscpp", "identity"), ("tesscpp", "devhold"), ("host", "identity"), ("tesscpp-py", "identity"),
            ("tesscpp-py", "devhold"), ("tesscpp-py", "devscale"), ("reference", "identity"),
            ("reference", "devhold"), ("reference", "devscale")]
    if args.only:
        keys = [key for key in keys if key[0] == args.only]
    for key in keys:
        server, call = serve(*key)
        try:
            if key == ("tesscpp", "identity"):
                health = []
                for _ in range(50):
                    t0 = time.perf_counter()
                    server.health()
                    health.append(time.perf_counter() - t0)
                print(f"GET /health through the tesscpp client: {fmt_time(statistics.median(health))}", flush=True)
            for nbytes, label in SIZES:
                iterations = 3 if (key[0] == "host" and nbytes >= 64 * 2**20) else args.iterations
                if args.phases:
                    mark_phases(args.phases, f"{key[1]} {label}")
                samples = timed_call(call, inputs[label], iterations, identity=key[1] == "identity")
                if key[1] == "devscale":
                    assert torch.equal(torch.from_dlpack(call(inputs[label])), 2 * inputs[label] + 1)
                times[label][key] = statistics.median(samples)
                p90 = samples[int(0.9 * (len(samples) - 1))]
                print(f"{label} {key[0]} {key[1]}: median {fmt_time(times[label][key])}, p90 {fmt_time(p90)}",
                      flush=True)
        finally:
            server.teardown()
    if args.phases:
        print_phases(args.phases)
        return 0
    if args.only:
        for label, t in times.items():
            print(f"| {label} | devhold {fmt_time(t[(args.only, 'devhold')])} "
                  f"| identity {fmt_time(t[(args.only, 'identity')])} |")
        return 0
    gpu = torch.cuda.get_device_name()
    lines = [
        f"cuda_ipc apply, float32 CUDA tensor in and out ({gpu}; medians)",
        "",
        "| size | devhold: tesscpp | devhold: tesseract-core | ratio | identity: tesscpp "
        "| identity: tesseract-core | ratio | identity: host path (tesscpp) | torch copy of x |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, t in times.items():
        lines.append(
            f"| {label} | {fmt_time(t[('tesscpp', 'devhold')])} | {fmt_time(t[('reference', 'devhold')])} "
            f"| {t[('reference', 'devhold')] / t[('tesscpp', 'devhold')]:.1f}x "
            f"| {fmt_time(t[('tesscpp', 'identity')])} | {fmt_time(t[('reference', 'identity')])} "
            f"| {t[('reference', 'identity')] / t[('tesscpp', 'identity')]:.1f}x "
            f"| {fmt_time(t[('host', 'identity')])} | {fmt_time(t['copy'])} |"
        )
    lines += [
        "",
        f"The same, Python components: tesscpp's client and `tesscpp serve tesseract_api.py` (tesscpp-py) "
        "against tesseract-core's SDK and tesseract-runtime, and against the C++ component on tesscpp "
        f"({gpu}; medians)",
        "",
        "| size | identity: tesscpp-py | tesseract-core | ratio | C++ on tesscpp | py / C++ "
        "| devhold: tesscpp-py | tesseract-core | ratio | C++ on tesscpp | py / C++ "
        "| devscale (torch): tesscpp-py | tesseract-core | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, t in times.items():
        row = [label]
        for component in ("identity", "devhold", "devscale"):
            ours, theirs = t[("tesscpp-py", component)], t[("reference", component)]
            row += [fmt_time(ours), fmt_time(theirs), f"{theirs / ours:.1f}x"]
            if component != "devscale":
                row += [fmt_time(t[("tesscpp", component)]), f"{ours / t[('tesscpp', component)]:.2f}x"]
        lines.append("| " + " | ".join(row) + " |")
    emit_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
