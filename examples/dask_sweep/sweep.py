"""A parameter sweep of a Tesseract spread over a Dask cluster.

Every task calls `apply` on the Tesseract at `url`: one replica, or (better)
an HAProxy in front of several (deploy/haproxy), which then spreads the calls
over the replicas. Each Dask worker keeps one `tesscpp.Tesseract` for the
URL and shares it between its threads (its calls run concurrently over a
pool of connections). It takes any Dask client; tests/deploy runs it on a
LocalCluster (other clusters, e.g. `Client("tcp://scheduler:8786")`, are
untested here).

    python examples/dask_sweep/sweep.py http://127.0.0.1:8000 --points 1000

sweeps the Rosenbrock example (examples/univariate) over a grid of (x, y).
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np


@functools.lru_cache(maxsize=None)
def _tesseract(url: str, token: str | None):
    """One client per worker process and URL (lru_cache: built on first use there)."""
    import tesscpp

    return tesscpp.Tesseract.from_url(url, token=token)


def evaluate(url: str, inputs: dict, token: str | None = None) -> dict:
    """One apply; runs on a Dask worker."""
    return _tesseract(url, token).apply(inputs)


def sweep(client, url: str, points: list[dict], token: str | None = None) -> list[dict]:
    """apply at every point, spread over the cluster of `client`; results in input order."""
    futures = client.map(evaluate, [url] * len(points), points, [token] * len(points), pure=False)
    return client.gather(futures)


def grid(n: int) -> list[dict]:
    """n points (x, y) on a grid around the Rosenbrock minimum (1, 1)."""
    side = int(np.ceil(np.sqrt(n)))
    xs, ys = np.meshgrid(np.linspace(-1.5, 1.5, side), np.linspace(-0.5, 2.0, side))
    return [{"x": float(x), "y": float(y)} for x, y in zip(xs.ravel()[:n], ys.ravel()[:n])]


def main() -> None:
    from dask.distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the Tesseract (or its load balancer)")
    parser.add_argument("--points", type=int, default=400)
    parser.add_argument("--scheduler", help="a Dask scheduler address; default: a LocalCluster")
    args = parser.parse_args()
    with Client(args.scheduler) if args.scheduler else Client(LocalCluster(n_workers=2, threads_per_worker=4)) as c:
        points = grid(args.points)
        began = time.perf_counter()
        results = sweep(c, args.url, points)
        elapsed = time.perf_counter() - began
        best = min(range(len(points)), key=lambda i: float(results[i]["result"]))
        print(f"{len(points)} applies in {elapsed:.2f} s; lowest value {float(results[best]['result']):.4g} "
              f"at {points[best]}")


if __name__ == "__main__":
    main()
