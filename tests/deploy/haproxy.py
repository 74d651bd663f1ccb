"""Debian's HAProxy with deploy/haproxy/haproxy.cfg in front of three replicas,
for the tests that need a real load balancer (tests/deploy, tests/containers)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


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


def start_haproxy(replicas: list[str]) -> tuple[subprocess.Popen, str]:
    """HAProxy balancing over `replicas` ("host:port", three), once every replica
    is in its pool; returns the process and the URL to call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, LB_BIND=f"127.0.0.1:{port}", **{f"REPLICA{i + 1}": r for i, r in enumerate(replicas)})
    # Its log goes to a file (a pipe nobody reads would fill): server_events() reads it.
    log = tempfile.NamedTemporaryFile(prefix="haproxy-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(["haproxy", "-db", "-f", ROOT / "deploy/haproxy/haproxy.cfg"], env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    log.close()
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    if not wait_for_health(url, 30):
        proc.kill()
        pytest.fail(f"HAProxy never answered: {proc.log_path.read_text()}")  # type: ignore[attr-defined]
    time.sleep(1.5)  # health checks every 500 ms, two to rise: every replica is in the pool
    return proc, url


def apply_count(url: str) -> int:
    """Applies a replica answered with 200, from its own /metrics."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    match = re.search(r'^tesscpp_requests_total\{endpoint="/apply",status="200"\} (\d+)', text, re.M)
    return int(match.group(1)) if match else 0


def server_events(haproxy: subprocess.Popen) -> list[str]:
    """The lines of HAProxy's log that say a server went up or down, and why."""
    text = haproxy.log_path.read_text(errors="replace")  # type: ignore[attr-defined]
    return [line for line in text.splitlines() if re.search(r"Server \S+ is (UP|DOWN)", line)]


def stop_haproxy(haproxy: subprocess.Popen) -> None:
    """Stops it and removes its log."""
    if haproxy.poll() is None:
        haproxy.kill()
        haproxy.wait()
    haproxy.log_path.unlink(missing_ok=True)  # type: ignore[attr-defined]
