"""Three replicas as containers (our from_image of a `tesscpp build` image)
behind Debian's HAProxy with deploy/haproxy/haproxy.cfg: calls from 8 threads
through one client spread over the three containers."""

from __future__ import annotations

import sys
import threading

import numpy as np

import tesscpp
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "deploy"))
from haproxy import apply_count, start_haproxy  # noqa: E402


def test_calls_spread_over_three_containers(vectoradd, tmp_path):
    replicas: list[tesscpp.Tesseract] = []
    balancer = None
    try:  # a failed start tears down what did start
        for _ in range(3):
            replica = tesscpp.Tesseract.from_image(vectoradd)
            replica.serve()
            replicas.append(replica)
        balancer = start_haproxy([f"127.0.0.1:{r.container_info().host_port}" for r in replicas], tmp_path / "lb")
        client = tesscpp.Tesseract.from_url(balancer.url)
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
        counts = [apply_count(r.url) for r in replicas]
        assert sum(counts) == 200 and min(counts) > 0, counts
    finally:
        if balancer:
            balancer.stop()
        for r in replicas:
            r.teardown()
