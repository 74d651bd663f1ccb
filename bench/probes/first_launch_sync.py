"""Which step of a cuda_ipc call's aftermath waits for an unrelated stream
(python/tests/test_gpu_transport.py's ipc_events test failed in fresh
processes, 2026-12-04).

In a fresh process: spins an unrelated torch stream for 6 x 200 M cycles, then
times a first x.sum() on local memory (the control); then, per round, a call of
the served noop, torch.from_dlpack of its output, a sum over it and a sync of
the legacy default stream, each followed by whether the unrelated stream was done.
Found on the H200: the control's first launch waited 611 ms for the unrelated
stream (CUDA loads a kernel on its first launch); every step of the calls' path
took <= 5 ms with the unrelated stream still running.

    TESSCPP_EXAMPLES_DIR=build/examples python3 bench/probes/first_launch_sync.py
"""

import os
import time
from pathlib import Path

import torch

import tesscpp
import tesscpp.cuda

SPIN = 200_000_000
x = torch.zeros(1 << 22, device="cuda")
unrelated = torch.cuda.Stream()


def step(label, fn):
    t0 = time.perf_counter()
    result = fn()
    print(f"  {label}: {(time.perf_counter() - t0) * 1e3:.1f} ms, unrelated done: {unrelated.query()}", flush=True)
    return result


torch.cuda.synchronize()
with torch.cuda.stream(unrelated):
    torch.cuda._sleep(6 * SPIN)
print("control (local memory, the process's first reduction)")
step("x.sum()", x.sum)
unrelated.synchronize()
noop = tesscpp.Tesseract.from_source(Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / "libnoop.so", gpu_transport="cuda_ipc")
noop.serve()
try:
    noop.apply({"x": x})
    torch.cuda.synchronize()
    for round_ in range(3):
        print(f"round {round_}")
        with torch.cuda.stream(unrelated):
            torch.cuda._sleep(6 * SPIN)
        out = step("apply", lambda: noop.apply({"x": x})["x"])
        adopted = step("from_dlpack", lambda out=out: torch.from_dlpack(out))
        step("sum", adopted.sum)
        step("legacy stream sync", torch.cuda.current_stream().synchronize)
        del adopted, out
        unrelated.synchronize()
    print("transport counters:", tesscpp.cuda.transport_counters())
finally:
    noop.teardown()
