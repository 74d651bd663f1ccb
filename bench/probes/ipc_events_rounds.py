"""Which call of the ipc_events test waits for an unrelated stream, round
after round in one process (python/tests/test_gpu_transport.py's
test_ipc_events_order_pending_producers_between_processes failed for the
Python noop in the full GPU suite on 2026-12-04, at its side-stream call,
after passing alone in fresh processes).

Per server (the C++ noop, then the Python noop, both on tesscpp's runtime with
cuda_ipc), in three states of the client's mapping cache (warm; after 80
distinct new mappings; the same followed by one round untimed), per round: an unrelated stream spins 6 x 200 M cycles; a
pending fill on the default stream, then the call; a pending fill on a side
stream, then the call (the first output still alive). Each step prints its
time and whether the unrelated stream was done after it, and the client's
transport counters at the end.

    TESSCPP_EXAMPLES_DIR=build/examples python3 bench/probes/ipc_events_rounds.py [ROUNDS]
"""

import os
import sys
import time
from pathlib import Path

import torch

import tesscpp
import tesscpp.cuda

SPIN = 200_000_000
ROOT = Path(__file__).resolve().parents[2]
SERVERS = {
    "noop.so": Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / "libnoop.so",
    "noop.py": ROOT / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py",
}
unrelated, side = torch.cuda.Stream(), torch.cuda.Stream()


def step(label, fn):
    t0 = time.perf_counter()
    result = fn()
    print(f"    {label}: {(time.perf_counter() - t0) * 1e3:.1f} ms, unrelated done: {unrelated.query()}", flush=True)
    return result


def one_round(noop, x, y) -> None:
    torch.cuda.synchronize()
    with torch.cuda.stream(unrelated):
        torch.cuda._sleep(6 * SPIN)
    torch.cuda._sleep(SPIN)
    x.fill_(9.0)
    out_x = step("apply on the default stream", lambda: noop.apply({"x": x})["x"])
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN)
        y.fill_(8.0)
        out_y = step("apply on a side stream", lambda: noop.apply({"x": y})["x"])
    ok = torch.equal(torch.from_dlpack(out_x), torch.full_like(x, 9.0))
    ok = ok and torch.equal(torch.from_dlpack(out_y), torch.full_like(y, 8.0))
    step("drop outputs", lambda: None)
    del out_x, out_y
    unrelated.synchronize()
    print(f"    values right: {ok}")


def churn(noop, calls: int) -> None:
    """Calls with distinct sizes: the server answers each from a new
    allocation, which this client maps; past the client's mapping cache (64
    entries) every new mapping evicts, and closes, the oldest."""
    for n in range(calls):
        noop.apply({"x": torch.zeros(1024 * (n + 1), device="cuda")})
    torch.cuda.synchronize()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, path in SERVERS.items():
        noop = tesscpp.Tesseract.from_source(path, gpu_transport="cuda_ipc")
        noop.serve()
        try:
            noop.apply({"x": torch.ones(4, device="cuda")})
            x, y = torch.zeros(1 << 22, device="cuda"), torch.zeros(1 << 22, device="cuda")
            noop.apply({"x": x})
            noop.apply({"x": y})
            for label, churned, warm in (("warmed by one call each", 0, False), ("after 80 new mappings", 80, False),
                                         ("after 80 new mappings and one untimed round", 80, True)):  # fmt: skip
                churn(noop, churned)
                if warm:
                    print(f"{name}, {label}: the untimed round", flush=True)
                    one_round(noop, x, y)
                for r in range(rounds):
                    print(f"{name}, {label}, round {r}", flush=True)
                    one_round(noop, x, y)
            print(f"{name} transport counters: {tesscpp.cuda.transport_counters()}", flush=True)
        finally:
            noop.teardown()


if __name__ == "__main__":
    main()
