"""Three `tesscpp serve` replicas behind Debian's HAProxy with
deploy/haproxy/haproxy.cfg, driven from 8 threads through one client: calls
spread over the replicas, a replica killed mid-run costs no failed read and
only clear errors for calls it was computing (never a second execution), a
drained replica finishes its calls and leaves the pool. Loopback only;
everything is started for real.

Every wait is for something a server reports: a replica's /metrics (requests
in flight), its run directories (which calls it began), HAProxy's admin
socket (which servers are in the pool).

Needs TESSCPP_CLI and TESSCPP_BRIDGE_FIXTURES (the nap component); run by CTest.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

import tesscpp
from haproxy import apply_count, in_flight, start_haproxy, wait_until

NAP = {"x": [1.0, 2.0], "seconds": 0.05}


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through CTest (make test)", pytrace=False)
    return value


class Deployment:
    """Three replicas, each with an output folder of its own (so the run
    directories say which replica began which call), behind HAProxy."""

    def __init__(self, tmp_path: Path, library: Path | None = None) -> None:
        self.library = library or Path(required("TESSCPP_BRIDGE_FIXTURES")) / "libnap.so"
        self.replicas: list[subprocess.Popen] = []
        self.ports: list[int] = []
        self.outputs: list[Path] = []
        self.balancer = None
        try:
            for i in range(3):
                self.start_replica(tmp_path / f"r{i + 1}")
            self.balancer = start_haproxy([f"127.0.0.1:{p}" for p in self.ports], tmp_path / "haproxy")
        except BaseException:
            self.close()  # a failed start leaves nothing running
            raise
        self.url = self.balancer.url

    def start_replica(self, output: Path) -> None:
        output.mkdir(parents=True)
        proc = subprocess.Popen([required("TESSCPP_CLI"), "serve", self.library, "--port", "0",
                                 "--output-path", output, "--drain-timeout", "20"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True)  # fmt: skip
        self.replicas.append(proc)
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"replica exited with {proc.wait()} before serving", pytrace=False)
        self.ports.append(int(line.strip().rsplit(":", 1)[1]))
        self.outputs.append(output)

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[i]}"

    def executions(self) -> collections.Counter:
        """run_id -> how many replicas began a call with it."""
        return collections.Counter(p.name.removeprefix("run_") for out in self.outputs for p in out.glob("run_*"))

    def events(self) -> list[str]:
        return self.balancer.events() if self.balancer else []

    def kill(self, i: int) -> None:
        """Replica i dies at once, supervisor and workers (its own process group), as a machine that fails."""
        os.killpg(self.replicas[i].pid, signal.SIGKILL)
        self.replicas[i].wait()

    def close(self) -> None:
        for i, proc in enumerate(self.replicas):
            if proc.poll() is None:
                self.kill(i)
        if self.balancer:
            self.balancer.stop()


@pytest.fixture
def deployment(tmp_path):
    d = Deployment(tmp_path)
    yield d
    d.close()


def on_threads(n: int, work: Callable[[int], object]) -> list:
    """work(0..n-1) on n threads: their results; an exception in any thread is raised here."""
    results: list = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as e:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not [t for t in threads if t.is_alive()], "threads still running"
    if errors:
        raise errors[0]
    return results


def test_forward_reuse_steps_reach_the_replica_that_kept(tmp_path):
    """deploy/haproxy routes a derivative call by its reference to the replica
    that kept the forward (docs/forward-reuse.md): torch steps from 8 threads."""
    import numpy as np
    import torch

    from tesscpp.torch import apply_tesseract

    d = Deployment(tmp_path, Path(required("TESSCPP_BRIDGE_FIXTURES")) / "libkept.so")
    try:
        client = tesscpp.Tesseract.from_url(d.url)

        def work(thread: int) -> None:
            for step in range(10):
                x = torch.tensor([1.0, 2.0, 3.0 + thread + step], requires_grad=True)
                outputs = apply_tesseract(client, {"x": x})
                outputs["y"].sum().backward()
                s = float(x.detach() @ x.detach())
                np.testing.assert_allclose(x.grad.numpy(), s + 2 * x.detach().numpy() * float(x.detach().sum()))

        on_threads(8, work)
        lookups = collections.Counter()
        for i in range(3):
            for line in urllib.request.urlopen(d.replica_url(i) + "/metrics").read().decode().splitlines():
                if line.startswith("tesscpp_residual_lookups_total"):
                    name, value = line.rsplit(" ", 1)
                    lookups[name] += float(value)
        hits = lookups['tesscpp_residual_lookups_total{outcome="hit"}']
        misses = lookups['tesscpp_residual_lookups_total{outcome="miss"}']
        assert hits + misses == 80 and hits / 80 >= 0.99, (hits, misses)
    finally:
        d.close()


def test_calls_spread_over_the_replicas(deployment):
    client = tesscpp.Tesseract.from_url(deployment.url)

    def work(_: int) -> int:
        for _ in range(10):
            assert list(client.apply(NAP)["y"]) == [1.0, 2.0]
        return 10

    assert sum(on_threads(8, work)) == 80
    counts = [apply_count(deployment.replica_url(i)) for i in range(3)]
    assert sum(counts) == 80 and min(counts) >= 10, counts  # leastconn: every replica takes a share


def test_a_killed_replica_costs_no_read_and_no_second_execution(deployment):
    """Reads run from 4 threads while one long apply (run_id "victim")
    computes; once the replica that began it is found (its run directory, and
    the apply in flight in its /metrics), short applies join from 3 threads and
    that replica is SIGKILLed (its process group: supervisor and worker). The
    victim and any apply in flight there must
    fail with the balancer's error, never be replayed on another replica (a
    POST may have had effects), and no read may fail."""
    client = tesscpp.Tesseract.from_url(deployment.url)
    done = threading.Event()
    reads = {"ok": 0, "failed": []}
    outcomes: dict[str, str] = {}

    def call(run_id: str, seconds: float) -> None:
        try:
            client.apply({"x": [1.0], "seconds": seconds}, run_id=run_id)
            outcomes[run_id] = "ok"
        except Exception as e:  # noqa: BLE001 - checked below
            outcomes[run_id] = f"{type(e).__name__}: {e}"

    def read(_: int) -> None:
        while not done.is_set():
            try:
                assert client.health() == {"status": "ok"}
                reads["ok"] += 1
            except Exception as e:  # noqa: BLE001 - counted, the assertion below names it
                reads["failed"].append(str(e))

    def short_applies(i: int) -> None:
        n = 0
        while not done.is_set():
            call(f"t{i}-{n}", 0.2)
            n += 1

    readers = threading.Thread(target=lambda: on_threads(4, read), daemon=True)
    appliers = threading.Thread(target=lambda: on_threads(3, short_applies), daemon=True)
    victim = threading.Thread(target=call, args=("victim", 20.0), daemon=True)
    readers.start()
    try:
        victim.start()
        computing = wait_until(lambda: [i for i, out in enumerate(deployment.outputs) if (out / "run_victim").exists()],
                               30, "a replica to begin the victim call")  # fmt: skip
        assert len(computing) == 1, computing
        killed = computing[0]
        # Read while its second thread is free: a worker runs one call at a time (its
        # stdio is captured), so an apply queued behind the victim would hold that thread.
        assert in_flight(deployment.replica_url(killed)) == 1
        appliers.start()
        wait_until(lambda: len(outcomes) >= 3, 30, "short applies to be answered")
        deployment.kill(killed)
        victim.join(60)
        assert not victim.is_alive(), "the victim call is still waiting for an answer"
        # The pool carries on: HAProxy takes the dead replica out, applies succeed on the others.
        name = f"r{killed + 1}"
        wait_until(lambda: name not in deployment.balancer.in_pool(), 30, f"HAProxy to take {name} out")
        before = sum(1 for o in outcomes.values() if o == "ok")
        wait_until(lambda: sum(1 for o in outcomes.values() if o == "ok") >= before + 6, 30, "applies after the kill")
    finally:
        done.set()
        for thread in (readers, appliers, victim):
            if thread.ident is not None:
                thread.join(60)
    assert not readers.is_alive() and not appliers.is_alive()

    assert not reads["failed"] and reads["ok"] > 0, (reads["failed"][:3], deployment.events())
    failures = {r: o for r, o in outcomes.items() if o != "ok"}
    assert "victim" in failures, (outcomes.get("victim"), deployment.events())
    # Each names what happened: the balancer's error page (the replica died on a fresh
    # connection) or, where HAProxy closed a kept-alive connection without an answer, the
    # client's refusal to send the call again.
    for run_id, outcome in failures.items():
        assert re.search(r"Error 50[234] from Tesseract|not sent again", outcome), (run_id, outcome)
    executions = deployment.executions()
    twice = {r: n for r, n in executions.items() if n > 1}
    assert not twice, (f"calls executed on more than one replica: {twice}", {r: outcomes.get(r) for r in twice})
    # Every failed call that had begun did so on the killed replica; every answered one ran once.
    began_there = {p.name.removeprefix("run_") for p in deployment.outputs[killed].glob("run_*")}
    assert {r for r in failures if r in executions} <= began_there
    assert all(executions[r] == 1 for r, o in outcomes.items() if o == "ok")
    assert client.apply(NAP)["y"].tolist() == [1.0, 2.0]


def test_replicas_busy_computing_stay_in_the_pool(deployment):
    """Every thread of every replica computing 0.8 s calls back to back (sent
    to the replicas directly): a health check waits for a thread, up to a
    call's length, and must not take the replica out of the pool for it, or
    the balancer answers 503 to everyone while all replicas are merely busy."""
    done = threading.Event()
    direct = [tesscpp.Tesseract.from_url(deployment.replica_url(i)) for i in range(3)]

    def compute(i: int) -> int:
        n = 0
        while not done.is_set():
            assert direct[i % 3].apply({"x": [1.0], "seconds": 0.8})["y"].tolist() == [1.0]
            n += 1
        return n

    computed: list = []
    busy = threading.Thread(target=lambda: computed.append(on_threads(2 * len(direct), compute)), daemon=True)
    busy.start()
    wait_until(lambda: all(in_flight(deployment.replica_url(i)) >= 1 for i in range(3)), 30, "every replica busy")
    client = tesscpp.Tesseract.from_url(deployment.url)
    failures: list[str] = []
    busiest = [0, 0, 0]
    stop = time.monotonic() + 3
    while time.monotonic() < stop:
        try:
            assert client.health() == {"status": "ok"}
        except Exception as e:  # noqa: BLE001 - named by the assertion below
            failures.append(str(e))
        busiest = [max(b, in_flight(deployment.replica_url(i))) for i, b in enumerate(busiest)]
    done.set()
    busy.join(30)
    assert not busy.is_alive() and computed and sum(computed[0]) >= 6, computed  # a thread's error raises in join
    assert all(b >= 1 for b in busiest), busiest
    assert not failures, (failures[:3], deployment.events())


def test_a_drained_replica_finishes_its_calls_and_leaves_the_pool(deployment):
    client = tesscpp.Tesseract.from_url(deployment.url)
    results: list = []
    first = threading.Thread(target=lambda: results.append(
        client.apply({"x": [3.0], "seconds": 2.0}, run_id="long")["y"].tolist()))  # fmt: skip
    first.start()
    # Which replica computes it: the one that began it, with an apply in flight.
    busy = wait_until(lambda: [i for i, out in enumerate(deployment.outputs) if (out / "run_long").exists()],
                      30, "a replica to begin the long call")  # fmt: skip
    assert len(busy) == 1 and in_flight(deployment.replica_url(busy[0])) == 1, busy
    drained = deployment.replicas[busy[0]]
    drained.send_signal(signal.SIGTERM)
    # HAProxy's check of /health?ready sees 503 and takes it out (fall 1).
    name = f"r{busy[0] + 1}"
    wait_until(lambda: name not in deployment.balancer.in_pool(), 30, f"HAProxy to take {name} out")
    for _ in range(10):  # new calls go to the others meanwhile, none fails
        assert client.apply(NAP)["y"].tolist() == [1.0, 2.0]
    first.join(30)
    assert results == [[3.0]], "the drained replica answered the call it had begun"
    assert drained.wait(timeout=30) == 0
