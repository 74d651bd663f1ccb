"""Three `tesscpp serve` replicas behind Debian's HAProxy with
deploy/haproxy/haproxy.cfg, driven from 8 threads through one client: calls
spread over the replicas, a replica killed mid-run costs no failed read and
only clear errors for calls it was computing, a drained replica finishes its
calls and leaves the pool. Loopback only; everything is started for real.

Needs TESSCPP_CLI and TESSCPP_BRIDGE_FIXTURES (the nap component); run by CTest.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

import tesscpp
from haproxy import apply_count, server_events, start_haproxy, stop_haproxy

NAP = {"x": [1.0, 2.0], "seconds": 0.05}


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through CTest (make test)", pytrace=False)
    return value


class Deployment:
    def __init__(self, tmp_path: Path, library: Path | None = None) -> None:
        self.tmp_path = tmp_path
        self.library = library or Path(required("TESSCPP_BRIDGE_FIXTURES")) / "libnap.so"
        self.replicas: list[subprocess.Popen] = []
        self.ports: list[int] = []
        for _ in range(3):
            self.start_replica()
        self.haproxy, self.url = start_haproxy([f"127.0.0.1:{p}" for p in self.ports])

    def start_replica(self) -> None:
        proc = subprocess.Popen([required("TESSCPP_CLI"), "serve", self.library, "--port", "0",
                                 "--output-path", self.tmp_path, "--drain-timeout", "20"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.ports.append(int(proc.stdout.readline().strip().rsplit(":", 1)[1]))
        self.replicas.append(proc)

    def close(self) -> None:
        for proc in self.replicas:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stop_haproxy(self.haproxy)


@pytest.fixture
def deployment(tmp_path):
    d = Deployment(tmp_path)
    yield d
    d.close()


def on_threads(n: int, work) -> list:
    results: list = [None] * n
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, work(i))) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not [t for t in threads if t.is_alive()], "threads still running"
    return results


def test_calls_spread_over_the_replicas(deployment):
    client = tesscpp.Tesseract.from_url(deployment.url)

    def work(_: int) -> int:
        for _ in range(10):
            assert list(client.apply(NAP)["y"]) == [1.0, 2.0]
        return 10

    assert sum(on_threads(8, work)) == 80
    counts = [apply_count(f"http://127.0.0.1:{p}") for p in deployment.ports]
    assert sum(counts) == 80 and min(counts) >= 10, counts  # leastconn: every replica takes a share


def test_a_killed_replica_costs_no_read_and_only_clear_errors(deployment):
    client = tesscpp.Tesseract.from_url(deployment.url)
    stop = time.monotonic() + 4
    failures: list[str] = []
    reads = {"ok": 0, "failed": 0}

    def work(i: int) -> int:
        done = 0
        while time.monotonic() < stop:
            if i % 2 == 0:  # idempotent reads
                try:
                    assert client.health() == {"status": "ok"}
                    reads["ok"] += 1
                except Exception as e:  # noqa: BLE001 - counted, the assertion below names it
                    reads["failed"] += 1
                    failures.append(f"read: {e}")
            else:  # long enough that some are in flight on the replica killed
                try:
                    client.apply({"x": [1.0], "seconds": 0.3})
                except Exception as e:  # noqa: BLE001 - checked below
                    failures.append(f"apply: {type(e).__name__}: {e}")
            done += 1
        return done

    killer = threading.Timer(1.5, lambda: deployment.replicas[0].send_signal(signal.SIGKILL))
    killer.start()
    on_threads(8, work)
    killer.join()
    assert reads["failed"] == 0 and reads["ok"] > 0, (failures[:3], server_events(deployment.haproxy))
    # Applies the dead replica was computing fail, each with the balancer's answer named.
    assert all(f.startswith("apply: ") and re.search(r"Error 50[234] from Tesseract", f) for f in failures), failures
    assert len(failures) <= 4, failures  # at most the POSTs in flight on it (4 threads)
    assert client.apply(NAP)["y"].tolist() == [1.0, 2.0]  # the pool carries on without it


def test_replicas_busy_computing_stay_in_the_pool(deployment):
    """Every thread of every replica computing 0.8 s calls back to back (sent
    to the replicas directly): a health check waits for a thread, up to a
    call's length, and must not take the replica out of the pool for it, or
    the balancer answers 503 to everyone while all replicas are merely busy."""
    stop = time.monotonic() + 3
    direct = [tesscpp.Tesseract.from_url(f"http://127.0.0.1:{p}") for p in deployment.ports]

    def compute(i: int) -> int:
        done = 0
        while time.monotonic() < stop:
            direct[i % len(direct)].apply({"x": [1.0], "seconds": 0.8})
            done += 1
        return done

    busy = threading.Thread(target=lambda: on_threads(2 * len(direct), compute))
    busy.start()
    time.sleep(0.2)
    client = tesscpp.Tesseract.from_url(deployment.url)
    failures = []
    while time.monotonic() < stop:
        try:
            assert client.health() == {"status": "ok"}
        except Exception as e:  # noqa: BLE001 - named by the assertion below
            failures.append(str(e))
    busy.join(30)
    assert not failures, (failures[:3], server_events(deployment.haproxy))


def test_a_drained_replica_finishes_its_calls_and_leaves_the_pool(deployment):
    client = tesscpp.Tesseract.from_url(deployment.url)
    long_call = {"x": [3.0], "seconds": 2.0}
    results: list = []
    first = threading.Thread(target=lambda: results.append(client.apply(long_call)["y"].tolist()))
    first.start()
    time.sleep(0.5)
    # Which replica computes it: the one with an apply in flight.
    busy = [i for i, p in enumerate(deployment.ports)
            if "tesscpp_requests_in_flight 1" in requests.get(f"http://127.0.0.1:{p}/metrics", timeout=5).text]
    assert len(busy) == 1, busy
    drained = deployment.replicas[busy[0]]
    drained.send_signal(signal.SIGTERM)
    time.sleep(1.0)  # the health check sees /health?ready answer 503 (fall 1)
    for _ in range(10):  # new calls go to the others meanwhile, none fails
        assert client.apply(NAP)["y"].tolist() == [1.0, 2.0]
    first.join(30)
    assert results == [[3.0]], "the drained replica answered the call it had begun"
    assert drained.wait(timeout=30) == 0
