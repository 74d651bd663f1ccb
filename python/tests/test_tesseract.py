"""tesscpp.Tesseract: tesseract_core's interface over the C++ client.

Where tesseract-core's SDK can do the same call, its answer is the oracle.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
import requests
import tesseract_core
import torch

from conftest import fixture_api, fixture_library, required_dir
from tesscpp import RequestedEncoding, ServerCapabilities, Tesseract

ROOT = Path(__file__).resolve().parents[2]
PY_FIXTURES = ROOT / "tests" / "fixtures" / "python"
TEST_CASES = ROOT / "tests" / "fixtures" / "test_cases"


def example(name: str) -> Path:
    return required_dir("TESSCPP_EXAMPLES_DIR") / f"lib{name}.so"


@pytest.fixture(scope="module")
def served_vectoradd():
    with Tesseract.from_source(example("vectoradd")) as t:
        yield t


@pytest.fixture(scope="module")
def python_vectoradd():
    with Tesseract.from_source(
        PY_FIXTURES / "vectoradd" / "tesseract_api.py",
        python_executable=sys.executable,
        python_runtime="tesseract-runtime",
    ) as t:
        yield t


VECTORADD_INPUTS = {"a": np.array([1.0, 2.0, 3.0], np.float32), "b": np.array([4.0, 5.0, 6.0], np.float32), "s": 2.0}


def test_every_constructor_gives_the_sdks_answer(served_vectoradd, python_vectoradd):
    sdk = tesseract_core.Tesseract.from_url(python_vectoradd.url).apply(VECTORADD_INPUTS)
    handles = [
        Tesseract.from_library(example("vectoradd")),
        served_vectoradd,
        python_vectoradd,
        Tesseract.from_url(served_vectoradd.url),
        Tesseract.from_url(python_vectoradd.url, timeout=(5, 30)),
    ]
    for t in handles:
        out = t.apply(VECTORADD_INPUTS)
        assert sorted(out) == sorted(sdk)
        np.testing.assert_array_equal(out["result"], sdk["result"])
        assert out["result"].dtype == sdk["result"].dtype
        assert out["result"].flags.writeable


def test_arrays_cross_without_copies_in_process():
    t = Tesseract.from_library(example("noop"))
    x = np.arange(8.0)
    out = t.apply({"x": x})["x"]
    # The component returns its input: the answer is the caller's memory.
    assert out.__array_interface__["data"][0] == x.__array_interface__["data"][0]
    tensor = torch.arange(6, dtype=torch.float32)
    out = t.apply({"x": tensor})["x"]
    assert out.__array_interface__["data"][0] == tensor.data_ptr()
    grad_tensor = torch.ones(3, requires_grad=True)
    np.testing.assert_array_equal(t.apply({"x": grad_tensor})["x"], np.ones(3, np.float32))


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12.0).reshape(3, 4)[:, ::2],  # strided
        np.arange(6, dtype=">i4"),  # big-endian
        np.array([True, False, True]),
        np.arange(4, dtype=np.float16),
        np.arange(4, dtype=np.uint64),
        np.array([1 + 2j, 3 - 4j], np.complex128),
        np.array(7.5),  # 0-d
        np.zeros((0, 3)),  # empty
        np.float32(2.5),  # NumPy scalar: an array on the wire, as the SDK sends it
        torch.arange(10.0)[::3],  # strided tensor
    ],
    ids=[
        "strided",
        "big-endian",
        "bool",
        "float16",
        "uint64",
        "complex",
        "0-d",
        "empty",
        "numpy-scalar",
        "torch-strided",
    ],
)
@pytest.mark.parametrize("how", ["in-process", "served"])
def test_every_array_kind_round_trips(array, how, request):
    t = request.getfixturevalue("served_noop") if how == "served" else Tesseract.from_library(example("noop"))
    expected = np.asarray(array)
    expected = expected.astype(expected.dtype.newbyteorder("="))
    out = t.apply({"x": array})["x"]
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.fixture(scope="module")
def served_noop():
    with Tesseract.from_source(example("noop")) as t:
        yield t


def test_validation_errors_are_pydantics_and_match_the_sdk(served_vectoradd):
    bad = {"a": np.ones(3, np.float32), "b": "not an array"}
    with pytest.raises(pydantic.ValidationError) as ours:
        served_vectoradd.apply(bad)
    with pytest.raises(pydantic.ValidationError) as sdk:
        tesseract_core.Tesseract.from_url(served_vectoradd.url).apply(bad)
    assert ours.value.title == sdk.value.title == "endpoint apply"
    assert [(e["type"], e["loc"]) for e in ours.value.errors()] == [(e["type"], e["loc"]) for e in sdk.value.errors()]
    with pytest.raises(pydantic.ValidationError) as in_process:
        Tesseract.from_library(example("vectoradd")).apply(bad)
    assert {e["type"] for e in in_process.value.errors()} == {e["type"] for e in ours.value.errors()}


def test_missing_endpoints_are_not_implemented_errors(served_vectoradd):
    # tesseract-core's words exactly (code matches on them); what it serves goes in a note.
    with pytest.raises(NotImplementedError) as vjp:
        served_vectoradd.vector_jacobian_product(VECTORADD_INPUTS, ["a"], ["result"], {"result": np.ones(3)})
    assert str(vjp.value) == "Vector Jacobian Product (VJP) not implemented for this Tesseract."
    assert vjp.value.__notes__[0].startswith("This Tesseract serves: ") and "apply" in vjp.value.__notes__[0]
    with pytest.raises(NotImplementedError) as jvp:
        Tesseract.from_library(example("vectoradd")).jacobian_vector_product(VECTORADD_INPUTS, ["a"], ["result"], {})
    assert str(jvp.value) == "Jacobian Vector Product (JVP) not implemented for this Tesseract."


def test_server_errors_are_runtime_errors():
    with Tesseract.from_source(example("collections")) as t:
        with pytest.raises(RuntimeError, match="^Error 500 from Tesseract"):
            t.apply({"arrays": [np.array([np.inf, 1.0])], "weights": {}})


def test_unadvertised_encodings_are_value_errors(served_vectoradd):
    with pytest.raises(ValueError, match="output_format"):
        served_vectoradd.with_encoding(output_format="json+msgpack")


def test_unreachable_server_is_a_connection_error():
    with pytest.raises(ConnectionError):
        Tesseract.from_url("http://127.0.0.1:1", timeout=2).health()


def test_encoding_views_and_capabilities(served_vectoradd):
    caps = served_vectoradd.server_capabilities
    assert isinstance(caps, ServerCapabilities) and "json+binref" in caps.output_formats
    view = served_vectoradd.with_encoding(output_format="json", compression="none")
    assert view.current_encoding == RequestedEncoding("json", None, "none")
    assert served_vectoradd.current_encoding == RequestedEncoding("json+base64", None, None)
    np.testing.assert_array_equal(
        view.apply(VECTORADD_INPUTS)["result"], served_vectoradd.apply(VECTORADD_INPUTS)["result"]
    )
    assert Tesseract.from_library(example("vectoradd")).server_capabilities is None
    assert served_vectoradd.resolve_gpu_transport() == "none"


def test_served_tesseracts_need_serving_and_keep_their_logs():
    t = Tesseract.from_source(example("collections"))
    with pytest.raises(RuntimeError, match="context manager"):
        t.apply({})
    with t:
        assert t.health()["status"] == "ok"
        url = t.url
    assert "serving" in t.server_logs()
    with pytest.raises(ConnectionError):
        Tesseract.from_url(url, timeout=2).health()


def test_stream_logs_runs_python_while_the_call_holds_no_gil():
    # The callback runs on the client's log thread and needs the GIL while
    # apply() is still in progress: it would deadlock if apply held the GIL.
    lines: list[str] = []
    seen_during_call = threading.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        seen_during_call.set()

    with Tesseract.from_source(example("collections"), stream_logs=on_line) as t:
        t.apply({"arrays": [np.ones(3)], "weights": {"w": np.ones(3)}})
    assert lines == ["collections: summing 1 arrays of length 3", "collections: done"]
    assert seen_during_call.is_set()


def run_on_threads(call: Callable[[int], Any], n: int) -> dict[int, Any]:
    """call(0..n-1) on n threads released together: their results. Any
    exception in a thread, or a thread still running after 60 s, fails the
    test."""
    start = threading.Barrier(n)
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        start.wait(timeout=30)
        try:
            results[i] = call(i)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    stuck = [thread.name for thread in threads if thread.is_alive()]
    if stuck:
        pytest.fail(f"threads still running after 60 s: {stuck}")
    if errors or sorted(results) != list(range(n)):
        pytest.fail(f"threads failed: {errors!r}")
    return results


def test_calls_from_threads_get_their_own_answers(served_noop):
    def work(i: int) -> np.ndarray:
        t = Tesseract.from_url(served_noop.url)
        for _ in range(20):
            out = t.apply({"x": np.full(1000, float(i))})["x"]
            np.testing.assert_array_equal(out, np.full(1000, float(i)))
        return out

    run_on_threads(work, 4)


NAP_SECONDS = 0.2
NAP_THREADS = 8


@pytest.fixture(scope="module")
def runtime_nap(tmp_path_factory) -> Iterator[str]:
    """The nap fixture's Python twin under `tesseract-runtime serve --num-workers
    8` (worker processes, so its calls overlap): the server the client's
    concurrency is measured against. On port 0: uvicorn logs the port it bound."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}
    env["TESSERACT_API_PATH"] = str(fixture_api("nap"))
    log = tmp_path_factory.mktemp("runtime_nap") / "stderr"
    with open(log, "wb") as err:  # a file, not a pipe nobody reads (a full pipe stalls the server)
        server = subprocess.Popen(
            [sys.executable, "-c", "from tesseract_core.runtime.cli import main; main()", "serve",
             "--host", "127.0.0.1", "--port", "0", "--num-workers", str(NAP_THREADS)],
            env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        url = None
        while True:
            if url is None and (m := re.search(r"Uvicorn running on (http://\S+)", log.read_text(errors="replace"))):
                url = m.group(1)
            try:
                if url and requests.get(f"{url}/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tesseract-runtime did not serve nap: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

        # /health answers once the first worker is up; the others may still be
        # importing (seconds on a loaded 2-core CI machine), and calls sent
        # meanwhile all queue on that one. Wait until bursts of calls are
        # answered by two worker processes or more, which every overlap
        # measure below needs.
        def pid(_: int) -> int:
            body = {"inputs": {"x": [0.0], "seconds": 0.05}}
            return int(requests.post(f"{url}/apply", json=body, timeout=30).json()["pid"])

        pids: set[int] = set()
        while len(pids) < 2:
            if time.monotonic() > deadline:
                pytest.fail(f"only worker processes {sorted(pids)} of tesseract-runtime answered within 60 s")
            pids |= set(run_on_threads(pid, NAP_THREADS).values())
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def served_nap() -> Iterator[Tesseract]:
    with Tesseract.from_source(fixture_library("nap"), runtime_config={"num_workers": NAP_THREADS}) as t:
        yield t


def naps_at_once(tesseract: Any) -> tuple[int, int]:
    """NAP_THREADS calls from as many threads through one object: the most
    naps that were under way at one instant (from the intervals nap reports,
    so the load on the machine cannot fake or hide it: 1 when the calls
    queued), and how many server processes ran them."""

    def work(i: int) -> tuple[float, float, int]:
        out = tesseract.apply({"x": np.full(4, float(i)), "seconds": NAP_SECONDS})
        np.testing.assert_array_equal(out["y"], np.full(4, float(i)))
        return float(out["began"]), float(out["ended"]), int(out["pid"])

    naps = run_on_threads(work, NAP_THREADS).values()
    peak = max(sum(b <= began < e for b, e, _ in naps) for began, _, _ in naps)
    return peak, len({pid for _, _, pid in naps})


def test_the_sdk_overlaps_calls_from_threads(runtime_nap):
    # The control: tesseract-runtime's worker processes run calls side by side
    # and tesseract-core's SDK, one object on a requests Session, lets threads
    # use it concurrently; so the measure below can see overlap.
    assert naps_at_once(tesseract_core.Tesseract.from_url(runtime_nap))[0] >= 2


def test_calls_from_threads_run_in_parallel(runtime_nap):
    assert naps_at_once(Tesseract.from_url(runtime_nap))[0] >= 2


def test_the_server_overlaps_calls_on_its_workers(served_nap):
    # tesseract-core's SDK as the client, which overlaps its calls (above).
    # Each worker process runs one call at a time (its stdio goes into the
    # run's log), so overlap means several processes.
    peak, processes = naps_at_once(tesseract_core.Tesseract.from_url(served_nap.url))
    assert peak >= 2 and processes >= 2, (peak, processes)


def test_test_endpoint_runs_test_specs(served_vectoradd):
    spec = json.loads((TEST_CASES / "vectoradd" / "test_apply.json").read_text())
    served_vectoradd.test(spec)
    spec["expected_outputs"] = {"result": [0.0, 0.0, 0.0]}
    with pytest.raises(AssertionError):
        served_vectoradd.test(spec)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"a": object()}, r"^inputs\.a: cannot send a value of type object"),
        ({"a": {1: 2}}, r"^inputs\.a: dict keys must be strings"),
        ({"a": [1, 2**70]}, r"^inputs\.a\.\[1\]: integer does not fit 64 bits"),
    ],
)
def test_unsendable_inputs_are_type_errors_naming_the_field(served_vectoradd, inputs, message):
    with pytest.raises(TypeError, match=message):
        served_vectoradd.apply(inputs)


def test_direct_construction_is_refused():
    with pytest.raises(TypeError, match="from_url"):
        Tesseract()


def _in_flight(url: str) -> int:
    match = re.search(r"^tesscpp_requests_in_flight (\d+)", requests.get(f"{url}/metrics", timeout=10).text, re.M)
    assert match
    return int(match.group(1))


def _wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} after {seconds:.0f} s"
        time.sleep(0.01)


def _refused(url: str) -> bool:
    try:
        requests.get(f"{url}/health", timeout=5)
    except requests.ConnectionError:
        return True
    return False


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_drains_the_server(workers, tmp_path):
    """SIGTERM: new connections are refused, idle ones closed, the call in
    flight is answered, readiness turns false, and the server exits 0. Each
    step waits for what the server reports (its /metrics, a closed socket, a
    refused connection), never for a guessed time."""
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:  # a file: a pipe nobody reads could fill and stall the server
        server = subprocess.Popen(
            [required_dir("TESSCPP_CLI"), "serve", str(fixture_library("nap")), "--port", "0",
             "--num-workers", str(workers), "--output-path", str(tmp_path), "--drain-timeout", "20"],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip
    try:
        line = server.stdout.readline()
        assert line, f"exited with {server.wait()} before serving: {stderr.read_text()}"
        port = int(line.rsplit(":", 1)[1])
        url = f"http://127.0.0.1:{port}"
        idle = socket.create_connection(("127.0.0.1", port), timeout=30)
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert idle.recv(4096).startswith(b"HTTP/1.1 200")
        # A request whose header is still arriving when the drain begins.
        asking = socket.create_connection(("127.0.0.1", port), timeout=30)
        asking.sendall(b"GET /health?ready HTTP/1.1\r\n")
        answers: list[requests.Response] = []
        call = threading.Thread(target=lambda: answers.append(requests.post(
            f"{url}/apply", json={"inputs": {"x": [1.0, 2.0], "seconds": 3.0}},
            headers={"Accept": "application/json"}, timeout=30)))  # fmt: skip
        call.start()
        _wait_until(lambda: _in_flight(url) >= 1, 30, "the apply never arrived")  # it is being computed
        server.send_signal(signal.SIGTERM)
        assert idle.recv(4096) == b"", "an idle keep-alive connection is closed"
        if workers == 1:  # the worker that reads it is draining (with two, either may have it)
            asking.sendall(b"Host: x\r\n\r\n")
            ready = asking.recv(4096)
            assert ready.startswith(b"HTTP/1.1 503") and b'{"status":"draining"}' in ready, ready
        asking.close()  # else its half a request holds a worker until the drain timeout
        # Every worker (and the supervisor) closes its listening socket.
        _wait_until(lambda: _refused(url), 10, "new connections still accepted")
        assert call.is_alive() and not answers, "the call in flight was answered before the drain refused others"
        call.join(30)
        assert answers and answers[0].status_code == 200, answers
        assert answers[0].json()["y"]["data"]["buffer"] == [1.0, 2.0]
        assert answers[0].headers.get("connection") == "close"
        assert server.wait(timeout=30) == 0, stderr.read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_from_source_with_a_token_serves_and_calls_with_it():
    with Tesseract.from_source(example("vectoradd"), token="t0ken with spaces") as t:
        np.testing.assert_array_equal(t.apply(VECTORADD_INPUTS)["result"], [6.0, 9.0, 12.0])
        refused = requests.get(f"{t.url}/health", timeout=10)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        assert requests.get(f"{t.url}/health", headers={"Authorization": "Bearer t0ken with spaces"},
                            timeout=10).status_code == 200  # fmt: skip
        # An error answer (here 401) raises what tesseract-core's SDK raises for it.
        for client in (Tesseract.from_url(t.url), tesseract_core.Tesseract.from_url(t.url)):
            with pytest.raises(RuntimeError, match="401") as refused_call:
                client.apply(VECTORADD_INPUTS)
            assert type(refused_call.value) is RuntimeError
