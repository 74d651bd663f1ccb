"""A tesseract_api.py on tesscpp's runtime against the same module on tesseract-runtime, byte for byte.

Run with --server-backend=tesscpp-py (CTest does): the server under test is
`tesscpp serve <fixture>/tesseract_api.py`, the reference tesseract-runtime
1.15.0 serving the same file with the same TESSERACT_* settings
(docs/python-host.md). Where the differential suite compares decoded answers,
this one compares the bytes: /openapi.json and /docs of every Python fixture,
answers in json and json+base64 (with and without lz4), 422 and 500 bodies, and
the run directory an endpoint that prints and logs leaves behind. Then what
only a module can get wrong: one that does not import, or lacks apply.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conftest import EXTENDED, PY_FIXTURES, ROOT, live_children

FIXTURES = sorted(
    (
        {p.parent.name for p in PY_FIXTURES.glob("*/tesseract_api.py")}
        | {p.parent.name for p in (ROOT / "python" / "tests" / "fixtures").glob("*/tesseract_api.py")}
    )
    - EXTENDED
)
X = [1.0, 2.0, 3.0]


@pytest.fixture(autouse=True)
def _python_module_backend(backend: str) -> None:
    if backend != "tesscpp-py":
        pytest.skip("compares tesscpp serve tesseract_api.py with tesseract-runtime (--server-backend=tesscpp-py)")


def both(servers, example: str, method: str, path: str, **kwargs) -> tuple[requests.Response, requests.Response]:
    ours, theirs = servers.get(example), servers.reference(example)
    return (requests.request(method, f"{ours.url}{path}", timeout=60, **kwargs),
            requests.request(method, f"{theirs.url}{path}", timeout=60, **kwargs))  # fmt: skip


def same_bytes(ours: requests.Response, theirs: requests.Response) -> None:
    assert ours.status_code == theirs.status_code, (ours.text[:2000], theirs.text[:2000])
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert ours.content == theirs.content, f"\nours:   {ours.text[:3000]}\ntheirs: {theirs.text[:3000]}"


@pytest.mark.parametrize("example", FIXTURES)
def test_documents_are_byte_identical(servers, example):
    for path in ("/openapi.json", "/docs"):
        same_bytes(*both(servers, example, "GET", path))


def _apply(inputs: dict, accept: str | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if accept:
        headers["Accept"] = accept
    return {"data": json.dumps({"inputs": inputs}), "headers": headers}


GOOD = {"x": X, "scale": 2.5, "offset": 1e-05, "tags": ["a", "b"], "reduction": {"mode": "mean", "weights": {"w": 3}}}
ACCEPTS = [None, "application/json+base64", 'application/json+base64; compression="lz4"']


INT_ARRAYDICT = {"shape": [2], "dtype": "int32", "data": {"buffer": [4, 5], "encoding": "json"}}


@pytest.mark.parametrize("accept", ACCEPTS, ids=["json", "base64", "base64-lz4"])
@pytest.mark.parametrize(
    "inputs", [GOOD, {"x": X}, {"x": []}, {"x": INT_ARRAYDICT}], ids=["all-fields", "defaults", "empty", "arraydict"]
)
def test_answers_are_byte_identical(servers, inputs, accept):
    same_bytes(*both(servers, "pyfeatures", "POST", "/apply", **_apply(inputs, accept)))


BAD = {
    "constraint": {"x": X, "scale": 0},
    "model-validator": {"x": X, "offset": -1000.5},
    "max-length": {"x": X, "tags": ["a", "b", "c", "d"]},
    "literal": {"x": X, "reduction": {"mode": "median"}},
    "nested-dict": {"x": X, "reduction": {"weights": {"w": "heavy"}}},
    "missing": {"scale": 1.0},
    "extra-in-arraydict": {"x": {"shape": [1], "dtype": "float64", "data": {"buffer": [1], "encoding": "json"},
                                 "stray": 1}},
    "bad-base64": {"x": {"shape": [1], "dtype": "float64", "data": {"buffer": "!!!", "encoding": "base64"}}},
    "wrong-shape": {"x": {"shape": [2], "dtype": "float64", "data": {"buffer": [1], "encoding": "json"}}},
    "wrong-rank": {"x": [[1.0, 2.0]]},
    "wrong-dtype": {"x": {"shape": [1], "dtype": "complex64", "data": {"buffer": [[1, 0]], "encoding": "json"}}},
}  # fmt: skip


@pytest.mark.parametrize("inputs", list(BAD.values()), ids=list(BAD))
def test_422_bodies_are_byte_identical(servers, inputs):
    same_bytes(*both(servers, "pyfeatures", "POST", "/apply", **_apply(inputs)))


def test_a_derivative_that_raises_is_a_500(servers):
    body = {"data": json.dumps({"inputs": {"x": X}, "jac_inputs": ["x"], "jac_outputs": ["y"]}),
            "headers": {"Content-Type": "application/json"}}  # fmt: skip
    ours, theirs = both(servers, "pyfeatures", "POST", "/jacobian", **body)
    same_bytes(ours, theirs)
    assert ours.status_code == 500
    # In debug mode both answer with the Python traceback.
    ours = requests.post(f"{servers.get('pyfeatures', debug='1').url}/jacobian", timeout=60, **body)
    assert ours.status_code == 500 and "Traceback" in ours.text
    assert "RuntimeError: pyfeatures has no jacobian at this point" in ours.text


def _run_files(server, run_id: str) -> dict[str, object]:
    logs = server.output_path / f"run_{run_id}" / "logs"
    files: dict[str, object] = {}
    for path in sorted(p for p in logs.rglob("*") if p.is_file()):
        name = str(path.relative_to(logs))
        if name == "metrics.csv":
            rows = list(csv.reader(path.open()))
            files[name] = [rows[0]] + [row[1:] for row in rows[1:]]  # timestamps differ
        else:
            files[name] = path.read_text()
    return files


def test_run_directory_matches(servers):
    ours, theirs = servers.get("pyfeatures"), servers.reference("pyfeatures")
    for server in (ours, theirs):
        r = requests.post(f"{server.url}/apply", params={"run_id": "logged"}, timeout=60, **_apply(GOOD))
        assert r.status_code == 200, r.text
    mine, reference = _run_files(ours, "logged"), _run_files(theirs, "logged")
    assert mine == reference
    assert "pyfeatures apply on 3 values" in mine["tesseract.log"]
    assert [(key, step) for key, _, step in mine["metrics.csv"][1:]] == [("total", "0"), ("total", "5")]
    assert json.loads(mine["parameters.json"]) == {"scale": 2.5, "mode": "mean"}
    assert mine["artifacts/report.txt"].startswith("3 values, total ")


def _module_env(tmp_path: Path, source: str) -> tuple[Path, dict[str, str]]:
    module = tmp_path / "tesseract_api.py"
    module.write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    env["TESSCPP_PYTHON"] = sys.executable
    env["TESSERACT_OUTPUT_PATH"] = str(tmp_path)
    return module, env


def _serve_broken(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    module, env = _module_env(tmp_path, source)
    return subprocess.run([os.environ["TESSCPP_CLI"], "serve", str(module), "--port", "0", *flags], env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_a_module_that_does_not_import(tmp_path):
    done = _serve_broken(tmp_path, "import nonexistent_package_for_tesscpp_tests\n")
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'nonexistent_package_for_tesscpp_tests'" in done.stderr
    assert "ImportError: Could not load module from" in done.stderr  # tesseract-core's own words


def test_a_module_without_apply(tmp_path):
    source = ("from pydantic import BaseModel\n\nclass InputSchema(BaseModel):\n    a: int\n\n\n"
              "class OutputSchema(BaseModel):\n    b: int\n")  # fmt: skip
    done = _serve_broken(tmp_path, source)
    assert done.returncode == 1
    assert "TypeError: apply is not defined in Tesseract API module tesseract_api" in done.stderr


_TORCH_MODULE = """
import os
import subprocess
import time

import torch
from pydantic import BaseModel
from tesseract_core.runtime import Array, Float64
{at_import}

class InputSchema(BaseModel):
    x: Array[(None,), Float64]
    nap: float = 0.0


class OutputSchema(BaseModel):
    y: Array[(None,), Float64]
    pid: int
    child: str  # what a subprocess of the module sees: the handoff variable, then its descriptors


def apply(inputs: InputSchema) -> OutputSchema:
    time.sleep(inputs.nap)
    t = torch.from_numpy(inputs.x)
    child = subprocess.run(["sh", "-c", 'echo "$TESSCPP_WORKER_HANDOFF"; ls /proc/self/fd'], env={{**os.environ}},
                           capture_output=True, text=True, check=True).stdout
    return OutputSchema(y=(torch.outer(t, t) @ t).numpy(), pid=os.getpid(), child=child)  # a parallel region
"""


def _serve_workers(tmp_path: Path, source: str) -> tuple[subprocess.Popen, str]:
    """`serve` with 2 workers; the supervisor and its URL."""
    module, env = _module_env(tmp_path, source)
    command = [os.environ["TESSCPP_CLI"], "serve", str(module), "--port", "0", "--num-workers", "2"]
    with (tmp_path / "server.stderr").open("w") as err:  # a file: a pipe nobody reads could stall the server
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    return process, re.search(r"http://\S+", process.stdout.readline()).group(0)


def _outer_product_calls(url: str, workers: set[int]) -> int:
    """Calls until every worker in `workers` computed one (200 calls at most); how many it took."""
    x = [0.5, 1.0, 2.0]
    want = [a * sum(b * b for b in x) for a in x]  # (x x^T) x
    answered: set[int] = set()
    calls = 0
    while answered != workers and calls < 200:  # separate connections: the kernel picks a worker for each
        answer = requests.post(f"{url}/apply", timeout=60, **_apply({"x": x}, "application/json")).json()
        assert answer["y"]["data"]["buffer"] == pytest.approx(want)
        # The module's own subprocesses get neither the handoff nor its descriptors (stdio and ls's own only).
        handoff, *descriptors = answer["child"].splitlines()
        assert handoff == "" and sorted(map(int, descriptors)) == [0, 1, 2, 3], answer["child"]
        answered.add(answer["pid"])
        calls += 1
    assert answered == workers, f"answered by {answered}, workers {workers}"
    return calls


def _stop(process: subprocess.Popen, workers: set[int]) -> None:
    """SIGTERM: the supervisor drains, exits 0, and every worker it ran has ended."""
    process.terminate()
    assert process.wait(timeout=30) == 0
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists() and _state(pid) not in "ZX"], workers


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"  # gone meanwhile


def _until_in_flight(url: str, n: int) -> None:
    deadline = time.monotonic() + 60
    while f"tesscpp_requests_in_flight {n}" not in requests.get(f"{url}/metrics", timeout=60).text:
        assert time.monotonic() < deadline, f"never {n} requests in flight"
        time.sleep(0.02)


def _two_workers(process: subprocess.Popen) -> set[int]:
    deadline = time.monotonic() + 60
    while len(workers := live_children(process.pid)) != 2:
        assert time.monotonic() < deadline, f"workers of {process.pid}: {workers}"
        time.sleep(0.05)
    return workers


def test_a_module_whose_import_starts_threads_gets_fresh_workers(tmp_path):
    """Threads do not survive a fork: torch's pool, started by a computation at
    import, would be missing in forked workers, whose next parallel region then
    waits forever (seen: every call hung). Such a module's workers are fresh
    processes that import it themselves (exec'd with the listening socket and
    the metrics handed over), as tesseract-runtime's uvicorn workers are."""
    source = _TORCH_MODULE.format(at_import="_WARM = (torch.randn(256, 256) @ torch.randn(256, 256)).sum()")
    process, url = _serve_workers(tmp_path, source)
    workers: set[int] = set()
    try:
        workers = _two_workers(process)
        for pid in workers:  # exec'd, each with its own handoff
            environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert any(v.startswith(b"TESSCPP_WORKER_HANDOFF=") for v in environment), pid
        calls = _outer_product_calls(url, workers)
        # Both workers count into the one set of metrics.
        metrics = requests.get(f"{url}/metrics", timeout=60).text
        assert f'tesscpp_requests_total{{endpoint="/apply",status="200"}} {calls}' in metrics, metrics
        # A worker that crashes mid-call: that call is answered 500, fresh workers replace both.
        with ThreadPoolExecutor(1) as pool:
            napping = pool.submit(requests.post, f"{url}/apply", timeout=60, **_apply({"x": [1.0], "nap": 30}))
            _until_in_flight(url, 1)
            for pid in workers:
                os.kill(pid, signal.SIGSEGV)
            assert (napping.result().status_code, napping.result().text) == (500, "Internal Server Error")
        first, workers = workers, set()
        deadline = time.monotonic() + 60
        while len(workers := live_children(process.pid) - first) != 2:
            assert time.monotonic() < deadline, f"no fresh workers: {workers}"
            time.sleep(0.05)
        _outer_product_calls(url, workers)
    finally:
        _stop(process, workers)


def test_torch_computes_in_forked_workers(tmp_path):
    """A module that imports torch, computing in its calls only, is served by
    2 forked workers: torch's pool starts in each, and each computes."""
    process, url = _serve_workers(tmp_path, _TORCH_MODULE.format(at_import=""))
    workers: set[int] = set()
    try:
        workers = _two_workers(process)
        for pid in workers:  # forks: nothing handed over
            assert b"TESSCPP_WORKER_HANDOFF=" not in Path(f"/proc/{pid}/environ").read_bytes()
        _outer_product_calls(url, workers)
        assert process.poll() is None
    finally:
        _stop(process, workers)


def test_worker_memory_is_flat(servers):
    """10 000 applies, every one answered 200: the worker's resident memory
    after the first 1 000 does not grow."""
    server = servers.get("pyfeatures")
    (pid,) = live_children(server.process.pid)  # the one worker under the supervisor
    session = requests.Session()
    kwargs = _apply({"x": list(range(1000))}, "application/json+base64")

    def rss_kib() -> int:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))

    def calls(n: int) -> None:
        statuses = [session.post(f"{server.url}/apply", timeout=60, **kwargs).status_code for _ in range(n)]
        assert statuses == [200] * n, {s: statuses.count(s) for s in set(statuses)}

    calls(1000)
    before = rss_kib()
    calls(9000)
    growth = rss_kib() - before
    assert growth < 8 * 1024, f"resident memory grew {growth} KiB over 9 000 calls"
