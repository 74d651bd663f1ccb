"""Whether a cuda_ipc call from the legacy default stream waits for the
client's whole device (python/tests/test_gpu_transport.py saw an unrelated
stream finished when the call returned), or whether the legacy default stream
itself waited for it (torch's streams may be blocking ones).

Spins 6 x 200 M cycles on an unrelated stream (a torch stream: torch makes
them non-blocking), 200 M on the default stream, and checks the
unrelated stream after a plain synchronise of the default stream and after a
call; the client's phase trace (TESSCPP_PHASE_TRACE) says where a call's time
went. Found (docs/gpu-transport-protocol.md §12): the first call after a borrowed
output was dropped synchronises the client's device before acknowledging it.

    TESSCPP_EXAMPLES_DIR=build/examples python3 bench/probes/default_stream_sync.py
"""

import json
import os
import tempfile
import time
from pathlib import Path

trace = Path(tempfile.mkdtemp()) / "trace.jsonl"
os.environ["TESSCPP_PHASE_TRACE"] = str(trace)

import torch  # noqa: E402

import tesscpp  # noqa: E402

SPIN = 200_000_000


def unrelated_streams():
    yield "torch.cuda.Stream()", torch.cuda.Stream()


for name, unrelated in unrelated_streams():
    torch.cuda.synchronize()
    with torch.cuda.stream(unrelated):
        torch.cuda._sleep(6 * SPIN)
    torch.cuda._sleep(SPIN)
    torch.cuda.current_stream().synchronize()
    print(f"{name}: unrelated stream done after the default stream's own spin: {unrelated.query()}")

noop = tesscpp.Tesseract.from_source(Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / "libnoop.so", gpu_transport="cuda_ipc")
noop.serve()
try:
    noop.apply({"x": torch.ones(4, device="cuda")})
    for name, unrelated in [*unrelated_streams(), *unrelated_streams()]:
        x = torch.zeros(1 << 22, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(unrelated):
            torch.cuda._sleep(6 * SPIN)
        torch.cuda._sleep(SPIN)
        x.fill_(9.0)
        before = len(trace.read_text().splitlines()) if trace.exists() else 0
        t0 = time.perf_counter()
        out = noop.apply({"x": x})["x"]
        took = time.perf_counter() - t0
        print(f"{name}: call {took * 1e3:.0f} ms, unrelated stream done at return: {unrelated.query()}")
        for line in trace.read_text().splitlines()[before:]:
            print("   ", json.dumps(json.loads(line)))
        torch.cuda.synchronize()
finally:
    noop.teardown()
