"""The tesscpp client (through `tesscpp call`) against both servers.

Every case is sent by our client and by tesseract-core 1.15's SDK to the same server, for
both servers (`tesscpp serve` with the C++ examples and `tesseract-runtime serve` with the
Python fixtures), in every output encoding. The decoded answers must be equal: our client
against the SDK on each server (same dtype, shape and bits), and our client's answer from
one server against its answer from the other (check 52). Errors must be of the same kind
with the same validation issues.

The C++ API itself (stream_logs callbacks, from_source, from_library, bad servers) is
tested by the gtest suite in src/client/client_test.cc.
"""

from __future__ import annotations

import base64
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from tesseract_core import Tesseract

from conftest import TEST_CASES, _tool

BACKENDS = ("tesscpp", "python")
# (output_format, compression); None: the server's default / no compression asked for.
ENCODINGS = [
    ("json", None),
    ("json+base64", None),
    ("json+binref", None),
    ("json+base64", "lz4"),
    ("json+binref", "lz4"),
    (None, None),
]


def b64(values, dtype) -> dict:
    arr = np.asarray(values, dtype=dtype)
    return {"shape": list(arr.shape), "dtype": arr.dtype.name,
            "data": {"buffer": base64.b64encode(arr.tobytes()).decode(), "encoding": "base64"}}


def mesh_inputs() -> dict:
    return {"mesh": {
        "n_points": 5, "n_cells": 2,
        "points": np.array([[0, 666, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 1]], dtype=np.float64),
        "num_points_per_cell": np.array([4, 4], dtype=np.int64),
        "cell_connectivity": np.array([0, 1, 2, 3, 1, 2, 3, 4], dtype=np.int64),
        "cell_data": {"temperature": np.array([[100, 105], [110, 115]], dtype=np.float32),
                      "pressure": np.array([[1, 1.2], [1.1, 1.3]], dtype=np.float32)},
        "point_data": {"displacement": np.arange(15, dtype=np.float32).reshape(5, 3)},
    }}


# id -> (example, endpoint, payload). Arrays are NumPy (the SDK encodes them; our CLI
# reads them as base64 arraydicts and encodes them as the case's format asks).
CASES = {
    "v1_apply": ("vectoradd", "apply", {"inputs": {"a": np.array([1, 2, 3]), "b": np.array([4, 5, 6])}}),
    "v3_apply": ("vectoradd", "apply", {"inputs": {"a": np.array([7.0, 11, 15]), "b": np.array([7.0, 11, 15])}}),
    "v4_normalize": ("vectoradd", "apply",
                     {"inputs": {"a": np.array([1, 2, 3]), "b": np.array([4, 5, 6]), "normalize": True}}),
    "plain_lists": ("vectoradd", "apply", {"inputs": {"a": [1, 2, 3], "b": [4.5, 5, 6], "s": 2}}),
    "v5_jacobian": ("vectoradd", "jacobian", {"inputs": {"a": np.array([1, 2, 3]), "b": np.array([4, 5, 6])},
                                              "jac_inputs": ["s", "a"], "jac_outputs": ["result"]}),
    "u1_apply": ("univariate", "apply", {"inputs": {"x": 0.0, "y": 0.0}}),
    "u2_jacobian_x": ("univariate", "jacobian", {"inputs": {"x": 0.0, "y": 0.0},
                                                  "jac_inputs": ["x"], "jac_outputs": ["result"]}),
    "u3_jacobian_y": ("univariate", "jacobian", {"inputs": {"x": 0.0, "y": 0.0},
                                                  "jac_inputs": ["y"], "jac_outputs": ["result"]}),
    "u4_jvp": ("univariate", "jacobian_vector_product",
               {"inputs": {"x": 0.0, "y": 0.0}, "jvp_inputs": ["x", "y"], "jvp_outputs": ["result"],
                "tangent_vector": {"x": 1.0, "y": 0.0}}),
    "u5_vjp": ("univariate", "vector_jacobian_product",
               {"inputs": {"x": 0.0, "y": 0.0}, "vjp_inputs": ["x", "y"], "vjp_outputs": ["result"],
                "cotangent_vector": {"result": 1.0}}),
    "u7_jacobian": ("univariate", "jacobian", {"inputs": {"x": 1.0, "y": 2.0},
                                                "jac_inputs": ["x", "y"], "jac_outputs": ["result"]}),
    "m1_apply": ("meshstats", "apply", {"inputs": mesh_inputs()}),
    "m4_jacobian": ("meshstats", "jacobian", {"inputs": mesh_inputs(), "jac_inputs": ["mesh.points"],
                                              "jac_outputs": ["statistics.barycenter"]}),
    "noop_nan_inf": ("noop", "apply", {"inputs": {"x": np.array([1.5, np.nan, np.inf, -np.inf, -0.0])}}),
    "noop_0d": ("noop", "apply", {"inputs": {"x": np.array(2.5, dtype=np.float32)}}),
    "noop_empty": ("noop", "apply", {"inputs": {"x": np.zeros((0, 3), dtype=np.int16)}}),
    "noop_dtypes": ("noop", "apply", {"inputs": {"x": np.arange(-6, 6, dtype=np.int8).reshape(3, 4)}}),
    "noop_bool": ("noop", "apply", {"inputs": {"x": np.array([True, False, True])}}),
    "noop_large": ("noop", "apply", {"inputs": {"x": np.random.default_rng(7).standard_normal(200_000)}}),
    "collections": ("collections", "apply",
                    {"inputs": {"arrays": [np.array([1.0, 2.0]), np.array([3.0, 4.0]), [5.0, 6.0]],
                                "weights": {"w1": np.array([0.5, 2.0]), "w2": [1.0, -1.0]}, "scale": 3.0}}),
}

# id -> (example, endpoint, payload): answered with an error by both servers.
ERROR_CASES = {
    "v8_shape_mismatch": ("vectoradd", "apply", {"inputs": {"a": [1, 2, 3], "b": [3, 4]}}),
    "v6_bad_jac_inputs": ("vectoradd", "jacobian", {"inputs": {"a": [1.0], "b": [2.0]},
                                                     "jac_inputs": ["invalid", "inputs"], "jac_outputs": ["result"]}),
    "u6_bad_path": ("univariate", "jacobian", {"inputs": {"x": 0.0, "y": 0.0},
                                                "jac_inputs": ["hey"], "jac_outputs": ["result"]}),
    "m5_validator": ("meshstats", "apply", {"inputs": {"mesh": {**mesh_inputs()["mesh"], "n_cells": 3}}}),
    "collections_ragged": ("collections", "apply", {"inputs": {"arrays": [[1.0, 2.0], [3.0]], "weights": {}}}),
    "m_bad_jac_outputs": ("meshstats", "jacobian", {"inputs": mesh_inputs(), "jac_inputs": ["mesh.points"],
                                                    "jac_outputs": ["nope"]}),
    "user_code_500": ("collections", "apply", {"inputs": {"arrays": [[1e308], [1e308]], "weights": {}}}),
}


def to_wire(node):
    """A payload with NumPy arrays as base64 arraydicts (what the CLI reads)."""
    if isinstance(node, np.ndarray):
        return b64(node, node.dtype)
    if isinstance(node, dict):
        return {k: to_wire(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_wire(v) for v in node]
    return node


def from_cli(node):
    """The CLI's printed answer with its arraydicts (base64) as NumPy arrays."""
    if isinstance(node, dict):
        if node.get("object_type") == "array":
            raw = base64.b64decode(node["data"]["buffer"])
            return np.frombuffer(raw, dtype=node["dtype"]).reshape(node["shape"])
        return {k: from_cli(v) for k, v in node.items()}
    if isinstance(node, list):
        return [from_cli(v) for v in node]
    return node


def assert_same(ours, theirs, where="result"):
    if isinstance(theirs, np.ndarray) or isinstance(ours, np.ndarray):
        ours_a, theirs_a = np.asarray(ours), np.asarray(theirs)
        assert ours_a.dtype == theirs_a.dtype, f"{where}: dtype {ours_a.dtype} != {theirs_a.dtype}"
        assert ours_a.shape == theirs_a.shape, f"{where}: shape {ours_a.shape} != {theirs_a.shape}"
        assert ours_a.tobytes() == theirs_a.tobytes(), f"{where}: values differ:\n{ours_a}\n{theirs_a}"
        return
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}.{key}")
        return
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), f"{where}: {ours!r} != {theirs!r}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
        return
    assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def cli_call(server, endpoint: str, payload, fmt=None, compression=None, *extra: str):
    """Runs `tesscpp call`; returns (exit status, decoded answer or None, stderr)."""
    command = [str(_tool("TESSCPP_CLI")), "call", server.url, endpoint]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as body:
        json.dump(to_wire(payload), body)
    command.append(f"@{body.name}")
    if fmt:
        command += ["--output-format", fmt]
    if compression:
        command += ["--compression", compression]
    command += ["--server-output-path", str(server.output_path), "--server-input-path", str(server.input_path),
                "--print-arrays", "base64", *extra]
    try:
        done = subprocess.run(command, capture_output=True, timeout=120, check=False)
    finally:
        Path(body.name).unlink()
    answer = from_cli(json.loads(done.stdout)) if done.returncode == 0 else None
    return done.returncode, answer, done.stderr.decode()


def sdk_call(server, endpoint: str, payload, fmt=None, compression=None):
    tess = Tesseract.from_url(server.url, server_output_path=server.output_path)
    if fmt or compression:
        tess = tess.with_encoding(output_format=fmt, compression=compression)
    if endpoint == "apply":
        return tess.apply(payload["inputs"])
    if endpoint == "jacobian":
        return tess.jacobian(payload["inputs"], payload["jac_inputs"], payload["jac_outputs"])
    if endpoint == "jacobian_vector_product":
        return tess.jacobian_vector_product(payload["inputs"], payload["jvp_inputs"], payload["jvp_outputs"],
                                            payload["tangent_vector"])
    return tess.vector_jacobian_product(payload["inputs"], payload["vjp_inputs"], payload["vjp_outputs"],
                                        payload["cotangent_vector"])


def cli_issues(stderr: str) -> list[tuple[str, str]]:
    """(loc, type) of each issue our client printed (pydantic's layout: loc line, then '  msg [type=...]')."""
    lines = stderr.splitlines()
    issues = []
    for i, line in enumerate(lines):
        if line.startswith("  ") and "[type=" in line and i > 0:
            issues.append((lines[i - 1].strip(), line[line.rindex("[type=") + 6:].rstrip("]")))
    return issues


@pytest.mark.parametrize(("fmt", "compression"), ENCODINGS, ids=lambda v: str(v))
@pytest.mark.parametrize("case", list(CASES))
def test_b42_48_52_same_answers(servers, case, fmt, compression):
    """Checks 42-45, 48, 52: our client = the SDK on each server, and both servers agree."""
    example, endpoint, payload = CASES[case]
    answers = {}
    for backend in BACKENDS:
        server = servers.get(example, backend=backend)
        status, ours, stderr = cli_call(server, endpoint, payload, fmt, compression)
        assert status == 0, f"{backend}: {stderr}"
        # A format left to the server is json+base64 for our client (lossless,
        # docs/compatibility.md), so the SDK is asked for that too.
        theirs = sdk_call(server, endpoint, payload, fmt or "json+base64", compression)
        assert_same(ours, theirs, f"{backend}:{case}")
        answers[backend] = ours
    assert_same(answers["tesscpp"], answers["python"], f"tesscpp vs python:{case}")


def test_call_prints_arrays_losslessly_by_default(servers):
    """`tesscpp call` prints arrays as JSON lists, unless one holds inf or nan
    (no JSON spelling): then every array prints as exact base64."""
    server = servers.get("noop", backend="tesscpp")
    printed = {}
    for name, x in {"finite": np.array([1.5, -0.25, 3.0]), "nan_inf": CASES["noop_nan_inf"][2]["inputs"]["x"]}.items():
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as body:
            json.dump(to_wire({"inputs": {"x": x}}), body)
        try:
            done = subprocess.run([str(_tool("TESSCPP_CLI")), "call", server.url, "apply", f"@{body.name}",
                                   "--server-output-path", str(server.output_path)],
                                  capture_output=True, timeout=120, check=False)
        finally:
            Path(body.name).unlink()
        assert done.returncode == 0, done.stderr.decode()
        printed[name] = json.loads(done.stdout)["x"]
        data = printed[name]["data"]
        values = (np.frombuffer(base64.b64decode(data["buffer"]), dtype=printed[name]["dtype"])
                  if data["encoding"] == "base64" else np.array(data["buffer"], dtype=np.float64))
        assert values.tobytes() == x.tobytes(), name
    assert printed["finite"]["data"] == {"buffer": [1.5, -0.25, 3.0], "encoding": "json"}
    assert printed["nan_inf"]["data"]["encoding"] == "base64"


def test_a_format_left_to_the_server_keeps_infinities(servers):
    """Our client asks for json+base64 when the caller names no format; the
    SDK takes the server's json, where +-inf arrive as NaN (null)."""
    example, endpoint, payload = CASES["noop_nan_inf"]
    for backend in BACKENDS:
        server = servers.get(example, backend=backend)
        status, ours, stderr = cli_call(server, endpoint, payload, None, None)
        assert status == 0, f"{backend}: {stderr}"
        x = np.asarray(ours["x"])
        assert np.isposinf(x[2]) and np.isneginf(x[3]), f"{backend}: {x}"
        sdk = np.asarray(sdk_call(server, endpoint, payload)["x"])
        assert np.isnan(sdk[2]) and np.isnan(sdk[3]), f"{backend}: {sdk}"


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_b46_errors_like_the_sdk(servers, case):
    """Check 46: 422s become structured errors with the SDK's issues; other errors keep status and body."""
    example, endpoint, payload = ERROR_CASES[case]
    kinds = {}
    for backend in BACKENDS:
        server = servers.get(example, backend=backend)
        status, _, stderr = cli_call(server, endpoint, payload)
        assert status == 2, f"{backend}: expected a failure, got {status}: {stderr}"
        try:
            sdk_call(server, endpoint, payload)
            pytest.fail(f"{backend}: the SDK did not fail")
        except ValidationError as e:
            sdk = [(".".join(str(p) for p in err["loc"]), err["type"]) for err in e.errors()]
            assert cli_issues(stderr) == sdk, f"{backend}: {stderr}"
            assert f"validation error{'s' if len(sdk) > 1 else ''} for endpoint {endpoint}" in stderr
            kinds[backend] = ("422", sorted(sdk))
        except RuntimeError as e:
            assert str(e).split(":")[0] in stderr, f"{backend}: {stderr} vs {e}"
            kinds[backend] = (str(e).split(":")[0], None)
    assert kinds["tesscpp"] == kinds["python"]


def test_b41_capabilities_refused_locally(servers):
    """Check 41: unadvertised formats, compressions and transports are refused before any request."""
    for backend in BACKENDS:
        server = servers.get("vectoradd", backend=backend)
        payload = {"inputs": {"a": [1.0], "b": [2.0]}}
        before = {p.name for p in server.output_path.iterdir()}
        for args in (["--output-format", "json+msgpack"], ["--compression", "zstd"], ["--gpu-transport", "cuda_ipc"]):
            command = [str(_tool("TESSCPP_CLI")), "call", server.url, "apply", json.dumps(payload), *args]
            done = subprocess.run(command, capture_output=True, timeout=60, check=False)
            assert done.returncode == 2 and b"does not accept" in done.stderr, done.stderr
        assert {p.name for p in server.output_path.iterdir()} == before  # nothing ran


def test_b45_binref_inputs_go_through_files_and_are_removed(servers):
    """Check 45: json+binref inputs are files in the server's input dir, gone after the call."""
    for backend in BACKENDS:
        server = servers.get("noop", backend=backend)
        x = np.arange(1000, dtype=np.float64)
        status, answer, stderr = cli_call(server, "apply", {"inputs": {"x": x}}, "json+binref")
        assert status == 0, stderr
        assert_same(answer["x"], x)
        assert list(server.input_path.iterdir()) == []


def test_b49_run_id_and_logs(servers):
    """Check 49: --run-id names the run directory, whose log holds what apply printed."""
    for backend in BACKENDS:
        server = servers.get("collections", backend=backend)
        payload = CASES["collections"][2]
        status, _, stderr = cli_call(server, "apply", payload, None, None, "--run-id", f"partb-{backend}")
        assert status == 0, stderr
        log = (server.output_path / f"run_partb-{backend}" / "logs" / "tesseract.log").read_text()
        assert "collections: summing 3 arrays of length 2\ncollections: done" in log


def test_b50_test_cases_pass(servers):
    """Check 50: every TestSpec file of the examples passes through our client's test(), on both servers."""
    ran = 0
    for example_dir in sorted(TEST_CASES.iterdir()):
        for spec in sorted(example_dir.glob("*.json")):
            for backend in BACKENDS:
                server = servers.get(example_dir.name, backend=backend, debug="1")
                command = [str(_tool("TESSCPP_CLI")), "call", server.url, "test", f"@{spec}"]
                done = subprocess.run(command, capture_output=True, timeout=60, check=False)
                assert done.returncode == 0, done.stderr.decode()
                assert json.loads(done.stdout)["status"] == "passed", (backend, spec, done.stdout)
                ran += 1
    assert ran >= 2 * 19


def test_b50_failing_spec_is_reported(servers, tmp_path: Path):
    spec = json.loads((TEST_CASES / "vectoradd" / "test_apply.json").read_text())
    spec["expected_outputs"]["result"]["data"]["buffer"] = base64.b64encode(
        np.array([5, 7, 10], dtype=np.float64).tobytes()).decode()
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(spec))
    for backend in BACKENDS:
        server = servers.get("vectoradd", backend=backend, debug="1")
        done = subprocess.run([str(_tool("TESSCPP_CLI")), "call", server.url, "test", f"@{path}"],
                              capture_output=True, timeout=60, check=False)
        assert done.returncode == 0 and json.loads(done.stdout)["status"] == "failed", done.stdout


class RecordingProxy:
    """A TCP proxy in front of a real server that keeps every byte the client
    sent, so a test can see what went over the wire (url, output_path and
    input_path as the server's, for cli_call)."""

    def __init__(self, server) -> None:
        import socket
        import threading

        self.output_path, self.input_path = server.output_path, server.input_path
        upstream = server.url.removeprefix("http://").rsplit(":", 1)
        self._upstream = (upstream[0], int(upstream[1]))
        self.sent = bytearray()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self._upstream)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source, sink, record: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if record:
                    self.sent += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(2)
                except OSError:
                    pass

    def close(self) -> None:
        self._listener.close()


def test_lz4_compresses_the_inputs_too_and_both_runtimes_read_them(servers):
    """With compression="lz4" the client sends its base64 input arrays lz4
    framed (docs/compatibility.md), and tesseract-runtime, like tesscpp,
    decodes them: the answer is right, and the wire holds no plain base64 of them."""
    x = np.linspace(0.0, 1.0, 4096)  # compressible, and large enough to show in the bytes
    for backend in BACKENDS:
        proxy = RecordingProxy(servers.get("noop", backend=backend))
        try:
            status, answer, stderr = cli_call(proxy, "apply", {"inputs": {"x": x}}, "json+base64", "lz4")
        finally:
            proxy.close()
        assert status == 0, (backend, stderr)
        np.testing.assert_array_equal(answer["result"]["x"] if "result" in answer else answer["x"], x)
        body = bytes(proxy.sent)
        assert base64.b64encode(x.tobytes())[:64] not in body, f"{backend}: the input went uncompressed"
        assert b"lz4" in body, body[:2000]


def test_run_ids_that_need_url_escaping_are_refused_before_any_request(servers):
    server = servers.get("univariate", backend="python")
    for run_id in ["a b", "x&y", "p%20", "h#1", "q?r", "plus+"]:
        proxy = RecordingProxy(server)
        try:
            status, _, stderr = cli_call(proxy, "apply", CASES["u1_apply"][2], None, None, "--run-id", run_id)
        finally:
            proxy.close()
        assert status != 0 and f"run_id '{run_id}' holds characters that would need URL escaping" in stderr, stderr
        assert b"POST" not in bytes(proxy.sent), run_id
