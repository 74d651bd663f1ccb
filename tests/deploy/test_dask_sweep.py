"""examples/dask_sweep: a sweep of the Rosenbrock example spread by a Dask
LocalCluster (worker processes) over 3 replicas behind HAProxy, checked
against the same points computed one by one in this process."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tesscpp
from haproxy import ROOT, apply_count
from test_replicas import Deployment, required

sys.path.insert(0, str(ROOT / "examples" / "dask_sweep"))
import sweep  # noqa: E402


@pytest.fixture
def rosenbrock(tmp_path):
    d = Deployment(tmp_path, Path(required("TESSCPP_EXAMPLES_DIR")) / "libunivariate.so")
    yield d
    d.close()


def test_the_sweep_equals_the_serial_results_and_uses_every_replica(rosenbrock):
    from dask.distributed import Client, LocalCluster

    points = sweep.grid(300)
    local = tesscpp.Tesseract.from_library(Path(required("TESSCPP_EXAMPLES_DIR")) / "libunivariate.so")
    serial = [float(local.apply(p)["result"]) for p in points]
    # Worker processes, as on a real cluster: tasks and results cross process boundaries.
    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:  # fmt: skip
        results = sweep.sweep(client, rosenbrock.url, points)
    assert np.array_equal([float(r["result"]) for r in results], serial)
    counts = [apply_count(f"http://127.0.0.1:{port}") for port in rosenbrock.ports]
    assert sum(counts) == 300 and min(counts) > 0, counts
