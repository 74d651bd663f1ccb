"""Containers: cold start and steady-state latency of Tesseract images, served
by tesscpp's from_image and by tesseract-core 1.15's, on the same images and
engine, in one run: the C++ noop and the Python noop module (`tesscpp build`
of its folder), and beside them the same module served by tesseract-runtime.

- cold start: from_image(...) + serve + the first apply, to the answer (then
  teardown, not timed); each side alternates, `--starts` times.
- steady state: a no-op apply of a 4-element float64 array through the
  published port, median of `--calls` after 20 warm-up calls.

The images are `tesscpp build` of examples/noop and of tests/fixtures/python/noop
with a tesseract_config.yaml. The engine is the one
DOCKER_HOST names, else a private dockerd (scripts/docker/engine.sh).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def build_images(build: Path, scratch: Path) -> dict[str, str]:
    """`tesscpp build` of examples/noop (C++) and of the Python noop module."""
    module = scratch / "noop_py"
    module.mkdir()
    (module / "tesseract_api.py").write_text((ROOT / "tests/fixtures/python/noop/tesseract_api.py").read_text())
    (module / "tesseract_config.yaml").write_text("name: noop-py\nversion: 1.0.0\n")
    tags = {"C++": "tesscpp-bench-noop:1", "Python": "tesscpp-bench-noop-py:1"}
    for source, tag in ((build / "examples/libnoop.so", tags["C++"]), (module, tags["Python"])):
        subprocess.run([build / "bin/tesscpp", "build", source, "--tag", tag], check=True, capture_output=True)
    return tags


def steady_median(t, x: dict, calls: int) -> float:
    for _ in range(20):
        t.apply(x)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        t.apply(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    from tesseract_core import Tesseract as CoreTesseract

    import tesscpp

    state = build / "docker"
    started = subprocess.run([ROOT / "scripts/docker/engine.sh", "start", state], capture_output=True, text=True,
                             check=True)  # fmt: skip
    os.environ["DOCKER_HOST"] = started.stdout.strip().removeprefix("DOCKER_HOST=")
    scratch = Path(tempfile.mkdtemp())
    tags = build_images(build, scratch)
    x = {"x": np.arange(4.0)}
    # (image, client) -> from_image
    cases = {(image, client): (from_image, tag) for image, tag in tags.items()
             for client, from_image in (("tesscpp", tesscpp.Tesseract.from_image),
                                        ("tesseract-core", CoreTesseract.from_image))}  # fmt: skip
    cold: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    steady: dict[tuple[str, str], float] = {}
    try:
        for _ in range(args.starts):
            for case, (from_image, tag) in cases.items():
                t0 = time.perf_counter()
                t = from_image(tag)
                t.serve()
                t.apply(x)
                cold[case].append(time.perf_counter() - t0)
                t.teardown()
        for case, (from_image, tag) in cases.items():
            with from_image(tag) as t:
                steady[case] = steady_median(t, x, args.calls)
        # The same module on tesseract-runtime (not in a container: tesseract-core
        # cannot build its image offline), with the SDK as client.
        with tesscpp.Tesseract.from_source(ROOT / "tests/fixtures/python/noop/tesseract_api.py",
                                           python_executable=sys.executable,
                                           python_runtime="tesseract-runtime") as server:  # fmt: skip
            runtime = steady_median(CoreTesseract.from_url(server.url), x, args.calls)
    finally:
        for tag in tags.values():
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
        subprocess.run([ROOT / "scripts/docker/engine.sh", "stop", state], capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    report(args, cold, steady, runtime)


def report(args: argparse.Namespace, cold: dict, steady: dict, runtime: float) -> None:
    print(f"# Containers: from_image of `tesscpp build` noop images (C++ and Python), {time.strftime('%Y-%m-%d')}")
    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"engine {os.environ['DOCKER_HOST']}; {args.starts} cold starts each (alternating), "
          f"median of {args.calls} steady-state calls of a 4-element float64 no-op apply.\n")  # fmt: skip
    print("| image | client | cold start + first apply, median | best | no-op apply, median |")
    print("|---|---|---|---|---|")
    for (image, client), starts in cold.items():
        print(f"| {image} | {client} | {statistics.median(starts) * 1e3:.0f} ms | {min(starts) * 1e3:.0f} ms "
              f"| {steady[(image, client)] * 1e6:.0f} µs |")  # fmt: skip
    print(f"| (Python module on tesseract-runtime, no container) | tesseract-core | — | — | {runtime * 1e6:.0f} µs |")
    print()
    py_cold = statistics.median(cold[("Python", "tesscpp")])
    cpp_cold = statistics.median(cold[("C++", "tesscpp")])
    print(f"- Python image cold start / C++ image cold start (tesscpp client): {py_cold / cpp_cold:.2f}x")
    py_sdk = steady[("Python", "tesseract-core")]
    print(f"- no-op apply, SDK client: tesseract-runtime / Python image: {runtime / py_sdk:.2f}x")
    print(f"- no-op apply, Python image: SDK client / tesscpp client: "
          f"{steady[('Python', 'tesseract-core')] / steady[('Python', 'tesscpp')]:.2f}x")  # fmt: skip
    print(f"- C++ image, tesseract-core / tesscpp client: "
          f"{steady[('C++', 'tesseract-core')] / steady[('C++', 'tesscpp')]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
