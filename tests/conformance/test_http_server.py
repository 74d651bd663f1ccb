"""The HTTP layer of `tesscpp serve`: keep-alive, Expect: 100-continue, the
body-size limit, chunked bodies, malformed requests, idle timeouts, concurrent
connections, clean shutdown. Raw sockets, so nothing is smoothed over by a
client library.

Needs TESSCPP_CLI (the tesscpp binary) and TESSCPP_EXAMPLES_DIR.
"""

from __future__ import annotations

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


def _require(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through CTest (make test)")
    return value


@pytest.fixture
def server(tmp_path):
    """Starts `tesscpp serve` on a free port with extra flags; yields (port, process)."""
    procs = []

    def start(example: str = "vectoradd", *flags: str):
        cli = _require("TESSCPP_CLI")
        lib = Path(_require("TESSCPP_EXAMPLES_DIR")) / f"lib{example}.so"
        proc = subprocess.Popen(
            [cli, "serve", str(lib), "--port", "0", "--output-path", str(tmp_path), *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        procs.append(proc)
        line = proc.stdout.readline()
        m = re.search(r"http://[^:]+:(\d+)", line)
        assert m, f"no 'serving' line; got {line!r}, stderr {proc.stderr.read() if proc.poll() is not None else ''}"
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
    port, _ = server("vectoradd", "--timeout-keep-alive", "1")
    with _connect(port) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
        s.settimeout(5)
        start = time.monotonic()
        assert s.recv(1) == b""  # the server closed it
        assert 0.5 < time.monotonic() - start < 4


def test_concurrent_connections(server):
    port, _ = server("vectoradd", "--num-workers", "4")
    errors = []
    answered = [0] * 16

    def client(i: int) -> None:
        try:
            with _connect(port) as s:
                for _ in range(25):
                    s.sendall(_post("/apply", APPLY))
                    status, _, body = _recv_response(s)
                    assert status == 200, body
                    assert json.loads(body)["result"]["data"]["buffer"] == [5.0, 7.0, 9.0], body
                    answered[i] += 1
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * SOCKET_TIMEOUT_S)
    assert not [t for t in threads if t.is_alive()], "clients still waiting for answers"
    assert not errors, errors[:3]
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
        time.sleep(1.0)  # every header and first KiB read
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
    time.sleep(0.3)
    with _connect(port) as s:
        s.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n")
        status, headers, body = _recv_response(s)
        assert status == 503 and headers["retry-after"] == "1" and b"too many request bodies" in body, body
        assert headers.get("connection") == "close"
    second = _connect(port)
    second.sendall(b"POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    time.sleep(0.3)
    with _connect(port) as s:  # a third request in flight: over the cap of 2
        s.sendall(_post("/apply", APPLY))
        status, headers, body = _recv_response(s)
        assert status == 503 and headers["retry-after"] == "1" and b"Too many requests in flight" in body, body
    with _connect(port) as s:  # liveness is never refused
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _recv_response(s)[0] == 200
    first.close()
    second.close()
    time.sleep(0.3)
    with _connect(port) as s:  # both released: served again
        s.sendall(_post("/apply", APPLY))
        assert _recv_response(s)[0] == 200


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


def _metrics(port: int) -> dict:
    """GET /metrics, parsed by prometheus_client's own parser: {(name, labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    with _connect(port) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = _recv_response(s)
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
    _, err = proc.communicate(timeout=30)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(x["method"], x["target"], x["status"]) for x in lines] == [
        ("POST", "/apply?run_id=seen", 200), ("GET", "/health", 200)], err  # fmt: skip
    assert lines[0]["bytes_in"] == len(APPLY) and lines[0]["bytes_out"] > 0 and lines[0]["remote"] == "127.0.0.1"
    assert all(x["duration_ms"] >= 0 and x["time"] > 1.7e9 for x in lines)
