"""Three replicas as containers (our from_image of a `tesscpp build` image)
behind Debian's HAProxy with deploy/haproxy/haproxy.cfg: calls from 8 threads
through one client spread over the three containers."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time

import numpy as np
import requests

import tesscpp
from conftest import ROOT


def test_calls_spread_over_three_containers(vectoradd):
    replicas = [tesscpp.Tesseract.from_image(vectoradd) for _ in range(3)]
    for r in replicas:
        r.serve()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        lb_port = s.getsockname()[1]
    env = dict(os.environ, LB_BIND=f"127.0.0.1:{lb_port}",
               **{f"REPLICA{i + 1}": f"127.0.0.1:{r.container_info().host_port}" for i, r in enumerate(replicas)})  # fmt: skip
    haproxy = subprocess.Popen(["haproxy", "-db", "-f", ROOT / "deploy/haproxy/haproxy.cfg"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{lb_port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/health", timeout=2).ok:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        time.sleep(1.5)  # every server risen (2 checks, 500 ms apart)
        client = tesscpp.Tesseract.from_url(url)
        errors: list[Exception] = []

        def work() -> None:
            try:
                for _ in range(25):
                    out = client.apply({"a": np.arange(3.0), "b": np.ones(3)})["result"]
                    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors[:3]
        counts = []
        for r in replicas:
            text = requests.get(f"{r.url}/metrics", timeout=10).text
            match = re.search(r'^tesscpp_requests_total\{endpoint="/apply",status="200"\} (\d+)', text, re.M)
            counts.append(int(match.group(1)) if match else 0)
        assert sum(counts) == 200 and min(counts) > 0, counts
    finally:
        haproxy.kill()
        haproxy.wait()
        for r in replicas:
            r.teardown()
