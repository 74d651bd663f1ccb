"""Debian's HAProxy with deploy/haproxy/haproxy.cfg in front of three replicas,
for the tests that need a real load balancer (tests/deploy, tests/containers).

The tests add a second configuration file of their own with an admin socket,
so they can ask HAProxy which servers are in the pool (`show stat`) instead of
waiting for a guessed number of health checks; the deployed file is unchanged."""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_until(condition: Callable[[], T], seconds: float, what: str, poll: float = 0.02) -> T:
    """Polls `condition` until it returns something true (returned) or `seconds`
    pass (the test fails naming `what`)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:.0f} s for {what}", pytrace=False)
        time.sleep(poll)


def wait_for_health(url: str, seconds: float) -> bool:
    """Polls `url`/health until it answers 2xx (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/health", timeout=2).ok:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return False


class Balancer:
    """A running HAProxy: its process, the URL to call, its log and admin socket."""

    def __init__(self, process: subprocess.Popen, url: str, workdir: Path) -> None:
        self.process, self.url, self.workdir = process, url, workdir
        self.log_path = workdir / "haproxy.log"
        self.admin = workdir / "admin.sock"

    def servers(self) -> dict[str, dict[str, str]]:
        """`show stat` of the replicas' backend: server name -> its row (status, check_status, ...)."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(str(self.admin))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        rows = csv.DictReader(data.decode().removeprefix("# ").splitlines())
        return {r["svname"]: r for r in rows if r["pxname"] == "replicas" and r["svname"] != "BACKEND"}

    def in_pool(self) -> set[str]:
        """The servers up whose last health check passed (HAProxy starts them UP, unchecked)."""
        return {name for name, r in self.servers().items() if r["status"] == "UP" and r["check_status"] == "L7OK"}

    def events(self) -> list[str]:
        """The lines of HAProxy's log that say a server went up or down, and why."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return [line for line in text.splitlines() if re.search(r"Server \S+ is (UP|DOWN)", line)]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_haproxy(replicas: list[str], workdir: Path | None = None) -> Balancer:
    """HAProxy balancing over `replicas` ("host:port", three), returned once every
    replica has passed a health check. Its port is picked free; when another
    process takes it before HAProxy binds it, HAProxy is started again on another."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="haproxy-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "admin.cfg").write_text(f"global\n    stats socket {workdir / 'admin.sock'} mode 600 level admin\n")
    for _ in range(3):
        balancer = _start_once(replicas, workdir)
        if balancer is not None:
            return balancer
    pytest.fail("HAProxy lost its port to another process three times", pytrace=False)


def _start_once(replicas: list[str], workdir: Path) -> Balancer | None:
    """One attempt of start_haproxy: None when another process took the port first."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, LB_BIND=f"127.0.0.1:{port}", **{f"REPLICA{i + 1}": r for i, r in enumerate(replicas)})
    # Its log goes to a file (a pipe nobody reads would fill): events() reads it.
    with open(workdir / "haproxy.log", "wb") as log:
        proc = subprocess.Popen(["haproxy", "-db", "-f", ROOT / "deploy/haproxy/haproxy.cfg",
                                 "-f", workdir / "admin.cfg"], env=env, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
    balancer = Balancer(proc, f"http://127.0.0.1:{port}", workdir)
    try:
        wait_until(lambda: proc.poll() is not None or (balancer.admin.exists() and wait_for_health(balancer.url, 1)),
                   30, "HAProxy to answer")  # fmt: skip
        if proc.poll() is not None:
            log_text = balancer.log_path.read_text(errors="replace")
            if "Address already in use" in log_text:
                return None  # lost the port to another process: pick another
            pytest.fail(f"HAProxy exited with {proc.returncode}: {log_text}", pytrace=False)
        wait_until(lambda: len(balancer.in_pool()) == len(replicas), 30, "every replica to pass a health check")
        return balancer
    except BaseException:
        balancer.stop()
        raise


def apply_count(url: str) -> int:
    """Applies a replica answered with 200, from its own /metrics."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    match = re.search(r'^tesscpp_requests_total\{endpoint="/apply",status="200"\} (\d+)', text, re.M)
    return int(match.group(1)) if match else 0


def in_flight(url: str) -> int:
    """Requests a replica has in flight (its /metrics; /health and /metrics are not counted)."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    match = re.search(r"^tesscpp_requests_in_flight (\d+)", text, re.M)
    assert match, text
    return int(match.group(1))
