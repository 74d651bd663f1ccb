"""The HTTP layer of `tesscpp serve`: keep-alive, Expect: 100-continue, the
body-size limit, chunked bodies, malformed requests, idle timeouts, concurrent
connections, clean shutdown. Raw sockets, so nothing is smoothed over by a
client library.

Needs TESSCPP_CLI (the tesscpp binary) and TESSCPP_EXAMPLES_DIR. The server
under test is --server-backend's: tesscpp serves the C++ components, tesscpp-py
the same components as Python modules (`tesscpp serve tesseract_api.py`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import weakref
from pathlib import Path

import pytest

from conftest import PY_FIXTURES, ROOT, live_children, selected_backend


def _require(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through CTest (make test)")
    return value


def _component(example: str, backend: str) -> Path:
    """What the server serves: an example's component library, or a test
    fixture's (nap: a call that sleeps); for tesscpp-py their Python twins."""
    if backend == "tesscpp-py":
        if example == "nap":
            return ROOT / "python" / "tests" / "fixtures" / "nap" / "tesseract_api.py"
        return PY_FIXTURES / example / "tesseract_api.py"
    if backend != "tesscpp":
        pytest.fail(f"this suite tests tesscpp's server; --server-backend={backend} is not one", pytrace=False)
    if example == "nap":
        if not os.environ.get("TESSCPP_BRIDGE_FIXTURES"):  # tests/CMakeLists.txt sets it where python/ is built
            pytest.skip("the nap fixture is built with the Python package, which this build lacks")
        return Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / "libnap.so"
    return Path(_require("TESSCPP_EXAMPLES_DIR")) / f"lib{example}.so"


@pytest.fixture
def backend(request) -> str:
    return selected_backend(request.config)


@pytest.fixture
def server(tmp_path, backend):
    """Starts `tesscpp serve` on a free port with extra flags (and environment
    variables in `env`); yields (port, process). The server's stderr goes to
    `process.log` (a file: a pipe nobody reads would stall a server that logs)."""
    procs = []

    def start(example: str = "vectoradd", *flags: str, env: dict[str, str] | None = None):
        cli = _require("TESSCPP_CLI")
        n = len(procs)
        log = tmp_path / f"server{n}.stderr"
        output = tmp_path / f"out{n}"
        output.mkdir()
        with log.open("w") as err:
            proc = subprocess.Popen([cli, "serve", str(_component(example, backend)), "--port", "0", "--output-path",
                                     str(output), *flags], stdout=subprocess.PIPE, stderr=err, text=True,
                                    env={**os.environ, **(env or {})})  # fmt: skip
        proc.log = log
        procs.append(proc)
        line = proc.stdout.readline()
        m = re.search(r"http://[^:]+:(\d+)", line)
        assert m, f"no 'serving' line; got {line!r}, stderr {log.read_text() if proc.poll() is not None else ''}"
        return int(m.group(1)), proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# Seconds any socket operation of these tests may wait: a server that stops
# answering fails the test instead of hanging it.
SOCKET_TIMEOUT_S = 30


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S)


# Bytes received past the end of one response: with pipelining the next answer
# can arrive in the same recv, and it belongs to the next _recv_response.
_unread: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()


def _recv_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Reads one HTTP/1.1 response with a content-length body."""
    data = _unread.pop(sock, b"")
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside the body")
        rest += chunk
    _unread[sock] = rest[length:]
    return status, headers, rest[:length]


APPLY = json.dumps({"inputs": {"a": [1, 2, 3], "b": [4, 5, 6]}}).encode()


def _post(path: str, body: bytes, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def test_keep_alive_serves_many_requests_on_one_connection(server):
    port, _ = server()
    with _connect(port) as s:
        for _ in range(20):
            s.sendall(_post("/apply", APPLY, "Accept: application/json\r\n"))
            status, headers, body = _recv_response(s)
            assert status == 200 and headers["content-type"] == "application/json"
            assert json.loads(body)["result"]["data"]["buffer"] == [5.0, 7.0, 9.0]


def test_pipelined_requests_are_answered_in_order(server):
    port, _ = server("vectoradd", "--timeout-keep-alive", "5")
    with _connect(port) as s:
        s.sendall(_post("/apply", APPLY, "Accept: application/json\r\n"))
        assert _recv_response(s)[0] == 200
        # Pipelined: two requests in one write, two answers in order.
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + _post("/apply", APPLY))
        assert _recv_response(s)[2] == b'{"status":"ok"}'
        assert _recv_response(s)[0] == 200


def test_expect_100_continue_is_answered_before_the_body(server):
    port, _ = server()
    with _connect(port) as s:
        s.sendall(_post("/apply", b"", "Expect: 100-continue\r\n").replace(b"Content-Length: 0",
                                                                            f"Content-Length: {len(APPLY)}".encode()))
        s.settimeout(5)
        interim = s.recv(4096)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim
        s.sendall(APPLY)
        status, _, body = _recv_response(s)
        assert status == 200, body


def test_body_over_the_limit_is_413_without_reading_it(server):
    port, _ = server("vectoradd", "--max-body-mib", "1")
    with _connect(port) as s:
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        status, headers, body = _recv_response(s)
        assert status == 413 and b"exceeds the limit" in body
        assert headers.get("connection") == "close"


def test_chunked_bodies_are_read(server):
    port, _ = server()
    chunks = [APPLY[:10], APPLY[10:]]
    payload = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"
    with _connect(port) as s:
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n" + payload)
        status, _, body = _recv_response(s)
        assert status == 200, body


def test_malformed_request_is_400_and_closed(server):
    port, proc = server()
    with _connect(port) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        status, headers, _ = _recv_response(s)
        assert status == 400 and headers.get("connection") == "close"
    assert proc.poll() is None


def test_idle_connections_are_closed_after_the_keep_alive_timeout(server):
    # The flag (1 s) against the default (60 s, longer than the socket's 30 s
    # timeout): a server that ignored the flag fails with a timeout here, one
    # that closed after every answer fails the second request.
    port, _ = server("vectoradd", "--timeout-keep-alive", "1")
    with _connect(port) as s:
        for _ in range(2):
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, _ = _recv_response(s)
            assert status == 200 and headers.get("connection") != "close"
        assert s.recv(1) == b""  # then idle: the server closed it


def _on_threads(n: int, work) -> None:
    """work(0..n-1) on n threads at once; the first exception any raised is raised here."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except Exception as e:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * SOCKET_TIMEOUT_S)
    assert not [t for t in threads if t.is_alive()], "clients still waiting for answers"
    if errors:
        raise errors[0]


def test_concurrent_connections(server):
    port, _ = server("vectoradd", "--num-workers", "4")
    answered = [0] * 16

    def client(i: int) -> None:
        with _connect(port) as s:
            for _ in range(25):
                s.sendall(_post("/apply", APPLY))
                status, _, body = _recv_response(s)
                assert status == 200, body
                assert json.loads(body)["result"]["data"]["buffer"] == [5.0, 7.0, 9.0], body
                answered[i] += 1

    _on_threads(16, client)
    assert answered == [25] * 16


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_shut_down_cleanly(server, sig):
    port, proc = server()
    with _connect(port) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == 0


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_declared_bodies_that_never_arrive_commit_no_memory(server):
    """200 connections each declare a 1 GiB body and send 1 KiB of it: the
    server's memory must not follow the declared sizes (it did: +800 MiB)."""
    port, proc = server("vectoradd", "--body-budget-mib", "0", "--timeout-keep-alive", "60")
    before = _rss_mib(proc.pid)
    sockets = []
    try:
        for _ in range(200):
            s = _connect(port)
            s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1073741824\r\n\r\n" + b"x" * 1024)
            sockets.append(s)
        # Every header read (a request counts as in flight from then on), and its first KiB with it.
        _wait_for_in_flight(port, 200)
        grown = _rss_mib(proc.pid) - before
        with _connect(port) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _recv_response(s)[0] == 200
        assert grown < 32, f"RSS grew by {grown:.1f} MiB for 200 KiB received"
    finally:
        for s in sockets:
            s.close()


def test_the_body_budget_and_the_in_flight_cap_answer_503_with_retry_after(server):
    port, _ = server("vectoradd", "--body-budget-mib", "10", "--max-in-flight", "2")
    first = _connect(port)
    # 8 MiB declared, half sent: it holds 8 MiB of the budget while it arrives.
    first.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n" + b"x" * 4096)
    _wait_for_in_flight(port, 1)
    with _connect(port) as s:
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n")
        status, headers, body = _recv_response(s)
        assert status == 503 and headers["retry-after"] == "1" and b"too many request bodies" in body, body
        assert headers.get("connection") == "close"
    _wait_for_in_flight(port, 1)  # the refused request no longer counts
    second = _connect(port)
    second.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    _wait_for_in_flight(port, 2)
    with _connect(port) as s:  # a third request in flight: over the cap of 2
        s.sendall(_post("/apply", APPLY))
        status, headers, body = _recv_response(s)
        assert status == 503 and headers["retry-after"] == "1" and b"Too many requests in flight" in body, body
    with _connect(port) as s:  # liveness is never refused
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
    first.close()
    second.close()
    _wait_for_in_flight(port, 0)
    with _connect(port) as s:  # both released: served again
        s.sendall(_post("/apply", APPLY))
        assert _recv_response(s)[0] == 200
    m = _metrics(port)
    assert m[("tesscpp_rejected_total", (("reason", "body_budget"),))] == 1
    assert m[("tesscpp_rejected_total", (("reason", "in_flight"),))] == 1


def test_a_token_is_required_when_configured(server, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    port, proc = server("vectoradd", "--token-file", str(token_file))
    assert "s3cret-token" not in Path(f"/proc/{proc.pid}/cmdline").read_text(), "the token is never an argument"
    for auth in ["", "Authorization: Bearer wrong-token!\r\n", "Authorization: Basic czNjcmV0LXRva2Vu\r\n",
                 "Authorization: Bearer s3cret-toke\r\n", "Authorization: Bearer s3cret-token2\r\n"]:  # fmt: skip
        with _connect(port) as s:
            s.sendall(_post("/apply", APPLY, auth))
            status, headers, body = _recv_response(s)
            assert status == 401 and headers["www-authenticate"] == 'Bearer realm="tesscpp"', (auth, body)
        with _connect(port) as s:
            s.sendall(f"GET /health HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
            assert _recv_response(s)[0] == 401, "health is not exempt unless configured"
    with _connect(port) as s:
        s.sendall(_post("/apply", APPLY, "Authorization: bearer s3cret-token\r\n"))
        assert _recv_response(s)[0] == 200
    public, _ = server("vectoradd", "--token-file", str(token_file), "--public-health")
    with _connect(public) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
        s.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 401


def test_the_clients_send_the_token(server, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("another token")
    port, _ = server("vectoradd", "--token-file", str(token_file))
    url = f"http://127.0.0.1:{port}"
    # The Python client where this suite can import the module (not in
    # sanitizer builds, tests/CMakeLists.txt); the CLI always.
    if os.environ.get("TESSCPP_PYTHON_MODULE", "ON") != "OFF":
        import tesscpp

        with pytest.raises(RuntimeError, match="Error 401 from Tesseract"):
            tesscpp.Tesseract.from_url(url).apply({"a": [1.0], "b": [2.0]})
        out = tesscpp.Tesseract.from_url(url, token="another token").apply({"a": [1.0], "b": [2.0]})
        assert list(out["result"]) == [3.0]
    cli = _require("TESSCPP_CLI")
    called = subprocess.run([cli, "call", url, "health", "--token-file", str(token_file)], capture_output=True,
                            text=True, timeout=30, check=False)  # fmt: skip
    assert called.returncode == 0 and json.loads(called.stdout) == {"status": "ok"}, called.stderr
    refused = subprocess.run([cli, "call", url, "health"], capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode != 0 and "401" in refused.stderr


def _wait_for_in_flight(port: int, n: int) -> None:
    """Until the server's /metrics says `n` requests are in flight (past their header, not answered)."""
    _until(lambda: _metrics(port)[("tesscpp_requests_in_flight", ())] == n, f"{n} requests in flight")


def _get(port: int, target: str, extra: str = "") -> tuple[int, dict[str, str], bytes]:
    with _connect(port) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
        return _recv_response(s)


def _metrics(port: int, extra: str = "") -> dict:
    """GET /metrics, parsed by prometheus_client's own parser: {(name, labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    status, headers, body = _get(port, "/metrics", extra)
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4"), headers
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(body.decode()) for sample in family.samples}  # fmt: skip


@pytest.mark.parametrize("workers", ["1", "3"])
def test_metrics_count_every_worker_in_the_prometheus_format(server, workers):
    port, _ = server("vectoradd", "--num-workers", workers, "--max-body-mib", "1")
    for _ in range(5):  # separate connections: with several workers, several of them answer
        with _connect(port) as s:
            s.sendall(_post("/apply", APPLY))
            assert _recv_response(s)[0] == 200
    with _connect(port) as s:
        s.sendall(_post("/apply", b"{}"))
        assert _recv_response(s)[0] == 422
    with _connect(port) as s:
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        assert _recv_response(s)[0] == 413
    m = _metrics(port)
    assert m[("tesscpp_requests_total", (("endpoint", "/apply"), ("status", "200")))] == 5
    assert m[("tesscpp_requests_total", (("endpoint", "/apply"), ("status", "422")))] == 1
    assert m[("tesscpp_requests_total", (("endpoint", "/apply"), ("status", "413")))] == 1
    assert m[("tesscpp_request_duration_seconds_count", (("endpoint", "/apply"),))] == 7
    assert m[("tesscpp_request_duration_seconds_bucket", (("endpoint", "/apply"), ("le", "+Inf")))] == 7
    assert m[("tesscpp_request_bytes_total", ())] == 5 * len(APPLY) + 2
    assert m[("tesscpp_response_bytes_total", ())] > 0
    assert m[("tesscpp_requests_in_flight", ())] == 0
    assert m[("tesscpp_rejected_total", (("reason", "in_flight"),))] == 0
    assert m[("process_resident_memory_bytes", ())] > 1 << 20


def test_the_access_log_has_one_json_line_per_request(server):
    port, proc = server("vectoradd", "--access-log")
    with _connect(port) as s:
        s.sendall(_post("/apply?run_id=seen", APPLY))
        assert _recv_response(s)[0] == 200
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    err = proc.log.read_text()
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(x["method"], x["target"], x["status"]) for x in lines] == [
        ("POST", "/apply?run_id=seen", 200), ("GET", "/health", 200)], err  # fmt: skip
    assert lines[0]["bytes_in"] == len(APPLY) and lines[0]["bytes_out"] > 0 and lines[0]["remote"] == "127.0.0.1"
    assert all(x["duration_ms"] >= 0 and x["time"] > 1.7e9 for x in lines)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in "ZX"  # an orphan's zombie waits for init, which may never reap it


def _until(condition, what: str):
    """Polls `condition` until it returns something true (returned), for SOCKET_TIMEOUT_S at most."""
    deadline = time.monotonic() + SOCKET_TIMEOUT_S
    while not (value := condition()):
        assert time.monotonic() < deadline, f"no {what} after {SOCKET_TIMEOUT_S} s"
        time.sleep(0.02)
    return value


def test_metrics_need_the_token_even_where_health_is_public(server):
    """TESSERACT_API_TOKEN and TESSERACT_PUBLIC_HEALTH from the environment:
    /health answers without the token, /metrics never does (it names the
    server's endpoints and load), and each refusal is counted."""
    port, _ = server("vectoradd", env={"TESSERACT_API_TOKEN": "m3trics", "TESSERACT_PUBLIC_HEALTH": "1"})
    assert _get(port, "/health")[0] == 200
    assert _get(port, "/metrics")[0] == 401
    assert _get(port, "/metrics", "Authorization: Bearer m3tric\r\n")[0] == 401
    assert _get(port, "/openapi.json")[0] == 401
    m = _metrics(port, "Authorization: Bearer m3trics\r\n")
    assert m[("tesscpp_rejected_total", (("reason", "unauthorized"),))] == 3


def test_a_killed_worker_is_replaced(server):
    port, proc = server("vectoradd", "--num-workers", "2")
    workers = _until(lambda: c if len(c := live_children(proc.pid)) == 2 else None, "two workers")
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    now = _until(lambda: c if len(c := live_children(proc.pid)) == 2 and victim not in c else None,
                 "worker in the killed one's place")  # fmt: skip
    assert len(now & workers) == 1
    assert f"worker {victim} died (signal 9); starting another" in proc.log.read_text()
    for _ in range(10):  # separate connections: both workers answer
        with _connect(port) as s:
            s.sendall(_post("/apply", APPLY))
            assert _recv_response(s)[0] == 200


@pytest.mark.parametrize("workers", ["1", "4"])
def test_a_worker_that_crashes_mid_call_costs_that_call_a_500(server, tmp_path, workers):
    """Every worker gets SIGSEGV (as a segfault in a component's native code
    would end one) while one of them runs a call (a 60 s nap): that caller
    gets a 500 at once from the supervisor instead of a closed connection or
    a hang, another connection held idle by a worker is closed, other workers
    are started, and the server answers on — with the default single worker
    too (issue 60)."""
    port, proc = server("nap", "--num-workers", workers)
    count = int(workers)
    first = _until(lambda: c if len(c := live_children(proc.pid)) == count else None, f"{workers} worker(s)")
    with _connect(port) as idle, _connect(port) as s:
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(idle)[0] == 200
        s.sendall(_post("/apply", json.dumps({"inputs": {"x": [1.0], "seconds": 60.0}}).encode()))
        _until(lambda: any((tmp_path / "out0").glob("run_*")), "the call begun (its run directory made)")
        for worker in first:
            os.kill(worker, signal.SIGSEGV)
        status, headers, body = _recv_response(s)
        assert (status, body) == (500, b"Internal Server Error"), body
        assert headers["connection"] == "close"
        assert s.recv(1) == b""
        assert idle.recv(1) == b""  # closed with the worker that held it, unanswered: nothing was asked
    _until(lambda: c if len(c := live_children(proc.pid)) == count and not c & first else None, "new workers")
    for _ in range(4):
        with _connect(port) as s:
            s.sendall(_post("/apply", json.dumps({"inputs": {"x": [2.0]}}).encode(), "Accept: application/json\r\n"))
            status, _, body = _recv_response(s)
            assert status == 200 and json.loads(body)["y"]["data"]["buffer"] == [2.0], body
    assert "died (signal 11) in 1 call(s), answered 500; starting another" in proc.log.read_text()


def test_without_supervision_one_process_serves(server):
    """--no-supervise: the process that prints the URL serves (no children),
    as before the crash guard; a crash there ends the server."""
    port, proc = server("vectoradd", "--no-supervise")
    with _connect(port) as s:
        s.sendall(_post("/apply", APPLY, "Accept: application/json\r\n"))
        assert _recv_response(s)[0] == 200
    assert not live_children(proc.pid)
    os.kill(proc.pid, signal.SIGSEGV)
    assert proc.wait(timeout=SOCKET_TIMEOUT_S) == -signal.SIGSEGV


def test_workers_do_not_outlive_their_supervisor(server):
    """SIGKILL leaves the supervisor no chance to stop its workers: the kernel
    signals them (PR_SET_PDEATHSIG), so nothing keeps serving the port."""
    port, proc = server("vectoradd", "--num-workers", "2")
    workers = _until(lambda: c if len(c := live_children(proc.pid)) == 2 else None, "two workers")
    proc.kill()
    proc.wait()
    _until(lambda: not any(_alive(w) for w in workers), "exit of the orphaned workers")
    with pytest.raises(ConnectionRefusedError):
        _connect(port)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_gpu_transport_needs_a_single_worker(how, backend):
    cli = _require("TESSCPP_CLI")
    workers = ["--num-workers", "2"] if how == "flag" else []
    env = {**os.environ, "TESSERACT_NUM_WORKERS": "2"} if how == "environment" else None
    served = str(_component("vectoradd", backend))
    run = subprocess.run([cli, "serve", served, "--port", "0", "--gpu-transport", "cuda_ipc", *workers],
                         capture_output=True, text=True, timeout=30, env=env, check=False)  # fmt: skip
    assert run.returncode != 0 and not run.stdout, (run.returncode, run.stdout)
    assert "gpu_transport='cuda_ipc' cannot be served by more than one worker (got num_workers=2)" in run.stderr


def test_the_caps_come_from_the_environment(server):
    port, _ = server("vectoradd", env={"TESSERACT_MAX_IN_FLIGHT": "1", "TESSERACT_BODY_BUDGET_MIB": "1"})
    held = _connect(port)
    held.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    _wait_for_in_flight(port, 1)
    with _connect(port) as s:
        s.sendall(_post("/apply", APPLY))
        status, _, body = _recv_response(s)
        assert status == 503 and b"Too many requests in flight (1)" in body, body
    held.close()
    _wait_for_in_flight(port, 0)
    with _connect(port) as s:  # alone in flight, but over the 1 MiB budget
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
        status, _, body = _recv_response(s)
        assert status == 503 and b"too many request bodies" in body, body
    m = _metrics(port)
    assert m[("tesscpp_rejected_total", (("reason", "in_flight"),))] == 1
    assert m[("tesscpp_rejected_total", (("reason", "body_budget"),))] == 1


def test_the_default_caps_are_256_requests_and_a_quarter_of_memory(server):
    quarter = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    # --max-body-mib above the budget, so that its 413 does not answer first.
    port, _ = server("vectoradd", "--max-body-mib", str(2 * quarter >> 20))
    with _connect(port) as s:
        s.sendall(f"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: {quarter + 1}\r\n\r\n".encode())
        status, _, body = _recv_response(s)
        assert status == 503 and b"too many request bodies" in body, body
    held = []
    try:
        # One body just under the budget (reserved, never sent), then 255 small ones.
        for length in [quarter - (1 << 20)] + [10] * 255:
            s = _connect(port)
            s.sendall(f"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode())
            held.append(s)
        _wait_for_in_flight(port, 256)
        with _connect(port) as s:
            s.sendall(_post("/apply", APPLY))
            status, _, body = _recv_response(s)
            assert status == 503 and b"Too many requests in flight (256)" in body, body
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize("supervised", [True, False], ids=["supervised", "one-process"])
def test_the_drain_timeout_ends_a_call_that_would_not_finish(server, supervised):
    """TESSERACT_DRAIN_TIMEOUT=1 and a 60 s call: SIGTERM stops the server
    after the timeout, with status 0, instead of the server waiting out the
    call. The caller gets a 500 from the supervisor (the worker it called
    ended); served by one process, its connection closes without an answer."""
    port, proc = server("nap", *([] if supervised else ["--no-supervise"]), env={"TESSERACT_DRAIN_TIMEOUT": "1"})
    with _connect(port) as s:
        s.sendall(_post("/apply", json.dumps({"inputs": {"x": [1.0], "seconds": 60.0}}).encode()))
        _wait_for_in_flight(port, 1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=SOCKET_TIMEOUT_S) == 0
        if supervised:
            assert _recv_response(s)[:3:2] == (500, b"Internal Server Error")
        else:
            with pytest.raises(ConnectionError):
                _recv_response(s)
    assert "drain timeout (1 s) passed with calls still running" in proc.log.read_text()


def test_a_connection_answered_while_draining_closes_after_its_answer(server):
    """SIGTERM while an answer is still being written (its reader is slow):
    the answer arrives whole, then the server closes the connection and exits,
    instead of keeping the connection for another request until the drain
    timeout (600 s here) ends the process."""
    port, proc = server("vectoradd", env={"TESSERACT_DRAIN_TIMEOUT": "600"})
    n = 1 << 21  # an answer of ~10 MB as a JSON list, more than the socket buffers hold
    zeros = {"object_type": "array", "shape": [n], "dtype": "float32",
             "data": {"buffer": base64.b64encode(bytes(4 * n)).decode(), "encoding": "base64"}}  # fmt: skip
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(SOCKET_TIMEOUT_S)
    with s:
        s.connect(("127.0.0.1", port))
        s.sendall(_post("/apply", json.dumps({"inputs": {"a": zeros, "b": zeros}}).encode(),
                        "Accept: application/json\r\n"))  # fmt: skip
        answered = ("tesscpp_requests_total", (("endpoint", "/apply"), ("status", "200")))
        _until(lambda: _metrics(port).get(answered) == 1, "the answer counted (its write begun)")
        proc.send_signal(signal.SIGTERM)
        _until(lambda: _refused(port), "the listening socket closed (the drain begun)")
        status, _, body = _recv_response(s)
        assert status == 200 and len(json.loads(body)["result"]["data"]["buffer"]) == n
        assert s.recv(1) == b"", "the connection stayed open after its answer"
    assert proc.wait(timeout=SOCKET_TIMEOUT_S) == 0


def _refused(port: int) -> bool:
    try:
        _connect(port).close()
        return False
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        # This probe's SYN met the listening socket as it closed: the kernel
        # resets what waited in its backlog (seen 1 run in 8 for tesscpp-py).
        return True


def test_access_log_lines_of_concurrent_requests_never_interleave(server):
    """3 workers and 12 threads, each line longer than a pipe's atomic write
    (4096 bytes): every line must still parse, one per request."""
    port, proc = server("vectoradd", "--access-log", "--num-workers", "3")
    pad = "p" * 5000

    def client(i: int) -> None:
        for n in range(40):
            with _connect(port) as s:  # a new connection each: every worker writes
                s.sendall(f"GET /health?{pad}&c={i}-{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert _recv_response(s)[0] == 200

    _on_threads(12, client)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=SOCKET_TIMEOUT_S) == 0
    lines = [line for line in proc.log.read_text().splitlines() if line.startswith("{")]
    targets = sorted(json.loads(line)["target"] for line in lines)
    assert targets == sorted(f"/health?{pad}&c={i}-{n}" for i in range(12) for n in range(40))


def test_tracing_writes_one_line_per_call_to_stderr(server):
    port, proc = server("vectoradd", env={"TESSERACT_TRACING": "1"})
    with _connect(port) as s:
        for _ in range(2):
            s.sendall(_post("/apply", APPLY))
            assert _recv_response(s)[0] == 200
        jacobian = {"inputs": {"a": [1, 2, 3], "b": [4, 5, 6]}, "jac_inputs": ["a"], "jac_outputs": ["result"]}
        s.sendall(_post("/jacobian", json.dumps(jacobian).encode()))
        assert _recv_response(s)[0] == 200
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # not a call
        assert _recv_response(s)[0] == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=SOCKET_TIMEOUT_S) == 0
    traced = [line for line in proc.log.read_text().splitlines() if line.endswith(" called")]
    assert traced == ["tesscpp: apply called", "tesscpp: apply called", "tesscpp: jacobian called"], traced
