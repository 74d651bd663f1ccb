"""The same requests to the server under test and to tesseract-runtime 1.15.0, answers compared.

The server under test is the one --server-backend names (conftest.py); the
reference is always tesseract-runtime serving the equivalent Python fixture
(tests/fixtures/python/<example>), started with the same TESSERACT_* settings.
Requests: every one recorded in tests/data/golden/runtime/*.cases.json, the
successful ones again in json+binref and with lz4, then error statuses
(404/405/406/422/500), bodies that are not JSON or not there, extra keys, lz4
and binref inputs, and the Accept headers tesseract-core's SDK sends.

Compared after decoding: status, Content-Type, the JSON body with every array
replaced by (encoding, compression, dtype, shape, decoded bytes) -- so binref
file names and lz4 frames may differ, object key order is ignored (jacobian
maps) -- and 422 items by type, loc and msg (see MSG_MAY_DIFFER).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import lz4.frame
import numpy as np
import pytest
import requests
from tesseract_core.sdk.tesseract import _decode_array

from conftest import EXAMPLES, GOLDEN_RUNTIME, TEST_CASES

# 422 messages that may differ, with why. Everything else compares verbatim
# (after the servers' own input/output paths are replaced by placeholders).
MSG_MAY_DIFFER = {
    # "Failed to decode array buffer (<encoding> encoding): <decoder's own error>": the
    # text after the colon comes from Python's base64/lz4/OS libraries; the part
    # before it must match.
    "array_decode_error": re.compile(r"^(Failed to decode array buffer \(\w+ encoding\)): .*$", re.S),
    # value_error messages that quote pydantic's or NumPy's internals rather than the
    # component's own validator (cotangent validation, ragged lists).
    "value_error": re.compile(
        r"^(Value error, )(?:.*validation error for .*|setting an array element with a sequence.*)$", re.S
    ),
}  # fmt: skip


@dataclass
class Case:
    id: str
    example: str
    method: str
    path: str
    body: object = None  # sent as JSON unless `raw` is set
    raw: bytes | None = None
    accept: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # TESSERACT_* of both servers
    setup: Callable | None = None  # setup(server) before the request, on each side
    compare_body: bool = True

    def send(self, server) -> requests.Response:
        if self.setup is not None:
            self.setup(server)
        headers = {}
        if self.method != "GET":
            headers["Content-Type"] = "application/json"
        if self.accept is not None:
            headers["Accept"] = self.accept
        headers.update(self.headers)
        headers = {k: v for k, v in headers.items() if v is not None}
        data = self.raw if self.raw is not None else (None if self.body is None else json.dumps(self.body).encode())
        return requests.request(self.method, f"{server.url}{self.path}", data=data, headers=headers,
                                params=self.params, timeout=120)  # fmt: skip


# ----------------------------------------------------------------------------- comparison


def _array(value: dict, server) -> dict:
    data = value.get("data", {})
    out = {"keys": list(value), "dtype": value.get("dtype"), "shape": value.get("shape"),
           "encoding": data.get("encoding"), "compression": data.get("compression")}  # fmt: skip
    try:
        arr = np.asarray(_decode_array(value, output_path=server.output_path))
        out["decoded"] = (arr.dtype.name, arr.shape, arr.tobytes().hex())
    except Exception as e:  # noqa: BLE001 - compare what is there instead
        out["undecodable"] = (type(e).__name__, data.get("buffer") if data.get("encoding") != "binref" else None)
    return out


def _paths(text: str, server) -> str:
    for path, label in ((server.input_path, "<input_path>"), (server.output_path, "<output_path>")):
        text = text.replace(str(path.resolve()), label).replace(str(path), label)
    return text


def _detail_item(item: dict, server) -> dict:
    out = {"type": item.get("type"), "loc": item.get("loc")}
    msg = _paths(str(item.get("msg")), server)
    pattern = MSG_MAY_DIFFER.get(item.get("type"))
    if pattern is not None and (m := pattern.match(msg)):
        msg = m[1] + " <may differ>"
    out["msg"] = msg
    return out


def normalize(value, server):
    if isinstance(value, dict):
        if value.get("object_type") == "array":
            return {"<array>": _array(value, server)}
        return {k: normalize(v, server) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v, server) for v in value]
    return value


def summary(r: requests.Response, server, case: Case) -> dict:
    out = {"status": r.status_code, "content-type": r.headers.get("content-type")}
    if r.status_code == 405:  # (in no particular order)
        out["allow"] = sorted(m.strip() for m in r.headers.get("allow", "").split(","))
    if not case.compare_body:
        return out
    ctype = out["content-type"] or ""
    if not ctype.startswith("application/json"):
        out["text"] = r.text
        return out
    body = r.json()
    if r.status_code == 422 and isinstance(body, dict) and isinstance(body.get("detail"), list):
        out["detail"] = [_detail_item(item, server) for item in body["detail"]]
    elif case.path == "/test" and isinstance(body, dict) and body.get("status") != "passed":
        out["body"] = {"status": body.get("status"), "endpoint": body.get("endpoint")}  # messages are Python's
    else:
        out["body"] = normalize(body, server)
    return out


def _first_difference(a, b, path="$") -> str | None:
    if type(a) is not type(b):
        return f"{path}: {a!r:.300} != {b!r:.300}"
    if isinstance(a, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            if d := _first_difference(a[k], b[k], f"{path}.{k}"):
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items\n{a!r:.1500}\n{b!r:.1500}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if d := _first_difference(x, y, f"{path}[{i}]"):
                return d
        return None
    return None if a == b else f"{path}: {a!r:.1000} != {b!r:.1000}"


def compare(case: Case, servers) -> None:
    sut = servers.get(case.example, **case.settings)
    ref = servers.reference(case.example, **case.settings)
    ours, theirs = summary(case.send(sut), sut, case), summary(case.send(ref), ref, case)
    difference = _first_difference(ours, theirs)
    assert difference is None, (
        f"{case.method} {case.path} ({case.id}): {sut.backend} (left) differs from tesseract-runtime (right) "
        f"at {difference}\nrequest body: {(case.raw or json.dumps(case.body))!s:.600}"
    )


@pytest.fixture(scope="module", autouse=True)
def _start_servers_side_by_side(request: pytest.FixtureRequest, server_pool, backend) -> None:
    """Starts every server the selected tests of this module need at once (tesseract-runtime starts slowly)."""
    wanted = []
    for item in request.session.items:
        if item.module is not request.module or not hasattr(item, "callspec"):
            continue
        params = item.callspec.params
        if "case" in params:
            example, settings = params["case"].example, params["case"].settings
        elif "example" in params:
            example, settings = params["example"], params.get("settings", {})
        else:
            continue
        wanted += [(backend, example, settings, "sut"), ("python", example, settings, "reference")]
    server_pool.prestart(wanted)


# ----------------------------------------------------------------------------- recorded cases


# The examples whose answers from tesseract-core were recorded (collections came later).
RECORDED_EXAMPLES = ("vectoradd", "univariate", "meshstats", "noop")


def _golden_cases() -> list[Case]:
    cases = []
    for example in RECORDED_EXAMPLES:
        recorded = json.loads((GOLDEN_RUNTIME / f"{example}.cases.json").read_text())
        for entry in recorded:
            case_id = f"{example}-{entry['name']}-{entry['accept'].split('/')[-1]}"
            cases.append(Case(case_id, example, entry["method"], entry["path"], entry["body"], accept=entry["accept"]))
            if entry["status"] == 200 and entry["accept"] == "application/json+base64":
                for accept in ("application/json+binref", "application/json+base64; compression=lz4",
                               "application/json+binref; compression=lz4"):  # fmt: skip
                    variant = f"{example}-{entry['name']}-{accept.split('/')[-1].replace('; ', '-')}"
                    cases.append(Case(variant, example, entry["method"], entry["path"], entry["body"], accept=accept))
    return cases


GOLDEN = _golden_cases()


@pytest.mark.parametrize("case", GOLDEN, ids=[c.id for c in GOLDEN])
def test_recorded_requests(servers, case):
    compare(case, servers)


# ----------------------------------------------------------------------------- further requests


def _b64(values, dtype, compress=False) -> dict:
    raw = np.asarray(values, dtype=dtype).tobytes()
    data = {"buffer": base64.b64encode(lz4.frame.compress(raw) if compress else raw).decode(), "encoding": "base64"}
    if compress:
        data["compression"] = "lz4"
    return {"shape": list(np.shape(values)), "dtype": dtype, "data": data}


V1 = {"inputs": {"a": _b64([1, 2, 3], "int64"), "b": _b64([4, 5, 6], "int64")}}
JAC = {**V1, "jac_inputs": ["a", "b", "s"], "jac_outputs": ["result"]}
MESH = {"inputs": {"mesh": {
    "n_points": 5, "n_cells": 2,
    "points": [[0, 666, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 1]],
    "num_points_per_cell": [4, 4], "cell_connectivity": [0, 1, 2, 3, 1, 2, 3, 4],
    "cell_data": {"temperature": [[100, 105], [110, 115]]}, "point_data": {"velocity": [[1.0, 0.0, 0.0]] * 5},
}}}  # fmt: skip


def _binref_setup(files: dict[str, bytes]) -> Callable:
    def setup(server) -> None:
        for name, content in files.items():
            (server.input_path / name).write_bytes(content)

    return setup


def _clash_setup(run_id: str) -> Callable:
    def setup(server) -> None:
        (server.output_path / f"run_{run_id}").write_text("not a directory")

    return setup


def _binref_cases() -> list[Case]:
    tag = uuid.uuid4().hex[:8]
    f32 = np.array([1, 2, 3], np.float32).tobytes()
    f64 = np.array([10, 20, 30], np.float64).tobytes()
    packed = lz4.frame.compress(f64)
    files = {f"plain_{tag}.bin": f32, f"offset_{tag}.bin": b"\x01" * 7 + f32 + b"tail",
             f"lz4_{tag}.bin": b"\x00" * 3 + packed, f"short_{tag}.bin": f32[:5]}  # fmt: skip
    setup = _binref_setup(files)

    def ref(buffer, dtype="float32", compression=None):
        data = {"buffer": buffer, "encoding": "binref"}
        if compression:
            data["compression"] = compression
        return {"shape": [3], "dtype": dtype, "data": data}

    bodies = {
        "relative": ref(f"plain_{tag}.bin"),
        "offset0": ref(f"plain_{tag}.bin:0"),
        "offset7": ref(f"offset_{tag}.bin:7"),
        "lz4": ref(f"lz4_{tag}.bin:3:{len(packed)}", "float64", "lz4"),
        "lz4_without_size": ref(f"lz4_{tag}.bin:3", "float64", "lz4"),
        "lz4_wrong_offset": ref(f"lz4_{tag}.bin:0:{len(packed)}", "float64", "lz4"),
        "missing_file": ref(f"missing_{tag}.bin"),
        "short_file": ref(f"short_{tag}.bin"),
        "bad_offset": ref(f"plain_{tag}.bin:x"),
    }
    return [
        Case(f"binref-input-{name}", "vectoradd", "POST", "/apply", {"inputs": {"a": a, "b": [4, 5, 6]}},
             accept="application/json", setup=setup)
        for name, a in bodies.items()
    ]  # fmt: skip


def _accept_cases() -> list[Case]:
    accepts = [
        None, "", "*/*", "application/*", "application/json", "application/json+base64", "application/json+binref",
        "application/*; gpu_transport=none",
        "application/json+base64; gpu_transport=none",
        "application/json+base64; gpu_transport=none; compression=lz4",
        "application/json+binref; gpu_transport=none; compression=lz4",
        "application/json; compression=lz4",
        "application/json, text/plain, */*",
        "text/html",
        "application/msgpack;q=1, application/json+binref;q=0.5",
        "application/msgpack;q=1, application/json+base64;q=0.5",
        "application/json+base64;q=0.2, application/json+binref;q=0.9",
        "application/json+base64;q=0, application/json",
        "application/json+binref;q=abc, application/json+base64;q=0.1",
        "application/json+nonsense",
        "application/json+base64; gpu_transport=cuda_ipc",
        "application/json+base64; gpu_transport=cuda_ipc, application/json",
        "application/json+base64; compression=LZ4",
        "application/json+base64; compression=none",
        'application/json+base64; compression="lz4"',
        "application/json+base64 ; Compression = lz4 ; flag",
        "APPLICATION/JSON+BASE64",
        "text/json",
        "application/json+base64,,",
        ", application/json+base64",
        "image/png, text/html;q=0.9",
    ]  # fmt: skip
    cases = []
    for accept in accepts:
        name = "absent" if accept is None else (accept or "empty")
        cases.append(Case(f"accept[{name}]-apply", "vectoradd", "POST", "/apply", V1, accept=accept))
        cases.append(Case(f"accept[{name}]-jacobian", "vectoradd", "POST", "/jacobian", JAC, accept=accept))
    for accept in ("application/json+base64", "application/json+nonsense", None):
        cases.append(Case(f"accept[{accept}]-abstract_eval-ignores", "univariate", "POST", "/abstract_eval",
                          {"inputs": {"x": {"shape": [], "dtype": "float32"}}}, accept=accept))  # fmt: skip
    cases.append(Case("accept-json+base64-server-default", "noop", "POST", "/apply", {"inputs": {"x": [1.5, 2]}},
                      settings={"output_format": "json+base64"}))  # fmt: skip
    cases.append(Case("accept-wildcard-server-default-lz4", "noop", "POST", "/apply", {"inputs": {"x": [1.5, 2]}},
                      accept="*/*", settings={"output_format": "json+base64", "compression": "lz4"}))  # fmt: skip
    cases.append(Case("accept-compression-none-overrides-server-lz4", "noop", "POST", "/apply",
                      {"inputs": {"x": [1.5, 2]}}, accept="application/json+base64; compression=none",
                      settings={"compression": "lz4"}))  # fmt: skip
    return cases


def _status_cases() -> list[Case]:
    clash = f"clash{uuid.uuid4().hex[:8]}"
    clash_debug = f"clashdebug{uuid.uuid4().hex[:8]}"
    return [
        # 404
        Case("404-get", "noop", "GET", "/no/such/path"),
        Case("404-post", "noop", "POST", "/no/such/path", {"inputs": {}}),
        Case("404-jacobian-not-implemented", "noop", "POST", "/jacobian", {"inputs": {"x": [1]}}),
        Case("404-test-without-debug", "vectoradd", "POST", "/test", {"endpoint": "apply", "payload": {}}),
        Case("404-check_gpu_transport", "vectoradd", "POST", "/check_gpu_transport", {}),
        # 405
        Case("405-post-health", "vectoradd", "POST", "/health"),
        Case("405-get-apply", "vectoradd", "GET", "/apply"),
        Case("405-put-apply", "vectoradd", "PUT", "/apply", V1),
        Case("405-delete-jacobian", "vectoradd", "DELETE", "/jacobian"),
        Case("405-post-openapi", "vectoradd", "POST", "/openapi.json"),
        # 406, and 422 winning over 406
        Case("406-nonsense", "vectoradd", "POST", "/apply", V1, accept="application/json+nonsense"),
        Case("406-jacobian", "vectoradd", "POST", "/jacobian", JAC, accept="text/html"),
        Case("422-before-406", "vectoradd", "POST", "/apply", {"inputs": {}}, accept="application/json+nonsense"),
        # 500: the run directory cannot be made
        Case("500-run-dir", "vectoradd", "POST", "/apply", V1, params={"run_id": clash}, setup=_clash_setup(clash)),
        Case("500-run-dir-debug", "vectoradd", "POST", "/apply", V1, params={"run_id": clash_debug},
             settings={"debug": "1"}, setup=_clash_setup(clash_debug), compare_body=False),
        # query parameters
        Case("run-id", "vectoradd", "POST", "/apply", V1, params={"run_id": f"diff{uuid.uuid4().hex[:8]}"}),
        Case("unknown-query-parameter", "vectoradd", "POST", "/apply", V1, params={"colour": "red"}),
        # other GETs
        Case("health", "univariate", "GET", "/health"),
        Case("docs", "univariate", "GET", "/docs", compare_body=False),
    ]  # fmt: skip


def _body_cases() -> list[Case]:
    """Bodies the framework refuses or fills: no JSON object, extra or missing keys."""
    return [
        # bodies that are no JSON object
        Case("json-invalid-truncated", "vectoradd", "POST", "/apply", raw=b'{"inputs": {"a": [1, 2,'),
        Case("json-invalid-trailing", "vectoradd", "POST", "/apply", raw=b'{"inputs": {}} x'),
        Case("json-invalid-blank", "vectoradd", "POST", "/apply", raw=b"   "),
        Case("json-invalid-quote", "vectoradd", "POST", "/jacobian", raw=b"{'inputs': {}}"),
        Case("body-missing", "vectoradd", "POST", "/apply", raw=b""),
        Case("body-null", "vectoradd", "POST", "/apply", raw=b"null"),
        Case("body-string", "vectoradd", "POST", "/apply", raw=b'"inputs"'),
        Case("body-no-content-type", "noop", "POST", "/apply", {"inputs": {"x": [1]}}, headers={"Content-Type": None}),
        Case("body-text-plain", "noop", "POST", "/apply", {"inputs": {"x": [1]}},
             headers={"Content-Type": "text/plain"}),
        Case("body-json-suffix-content-type", "noop", "POST", "/apply", {"inputs": {"x": [1]}},
             headers={"Content-Type": "application/vnd.api+json"}),
        # extra and missing keys
        Case("extra-top", "vectoradd", "POST", "/apply", {**V1, "extra": 1}),
        Case("extra-input", "vectoradd", "POST", "/apply", {"inputs": {**V1["inputs"], "c": [1]}}),
        Case("extra-arraydict", "vectoradd", "POST", "/apply",
             {"inputs": {"a": {**_b64([1, 2, 3], "int64"), "extra": 1}, "b": [4, 5, 6]}}),
        Case("extra-data", "vectoradd", "POST", "/apply",
             {"inputs": {"a": {"shape": [1], "dtype": "int8", "data": {"buffer": "AQ==", "encoding": "base64",
                                                                        "x": 1}}, "b": [1]}}),
        Case("extra-nested-model", "meshstats", "POST", "/apply",
             {"inputs": {"mesh": {**MESH["inputs"]["mesh"], "colour": "red"}}}),
        Case("extra-jacobian", "vectoradd", "POST", "/jacobian", {**JAC, "jvp_inputs": ["a"]}),
        Case("missing-nested", "meshstats", "POST", "/apply",
             {"inputs": {"mesh": {k: v for k, v in MESH["inputs"]["mesh"].items() if k != "points"}}}),
        Case("raw-encoding-refused", "noop", "POST", "/apply",
             {"inputs": {"x": {"shape": [1], "dtype": "int8", "data": {"buffer": [1], "encoding": "raw"}}}}),
    ]  # fmt: skip


def _array_cases() -> list[Case]:
    """Arrays on the wire: lz4, every dtype in every format, special values and empty arrays."""
    return [
        # lz4 inputs
        Case("lz4-input", "noop", "POST", "/apply", {"inputs": {"x": _b64([[1.5, 2], [3, 4]], "float32", True)}},
             accept="application/json"),
        Case("lz4-input-to-lz4-output", "noop", "POST", "/apply",
             {"inputs": {"x": _b64(np.arange(100) % 5, "int16", True)}},
             accept="application/json+base64; compression=lz4"),
        Case("lz4-input-corrupt", "noop", "POST", "/apply",
             {"inputs": {"x": {"shape": [2], "dtype": "int8",
                               "data": {"buffer": "AAAAAAAA", "encoding": "base64", "compression": "lz4"}}}}),
        Case("lz4-input-wrong-size", "noop", "POST", "/apply",
             {"inputs": {"x": {**_b64([1, 2, 3], "int32", True), "shape": [4]}}}),
        Case("compression-unknown", "noop", "POST", "/apply",
             {"inputs": {"x": {"shape": [1], "dtype": "int8",
                               "data": {"buffer": "AQ==", "encoding": "base64", "compression": "zstd"}}}}),
        # dtypes through noop, every format
        *[
            Case(f"dtype-{dtype}-{accept.split('/')[-1]}", "noop", "POST", "/apply",
                 {"inputs": {"x": _b64(np.arange(6).reshape(2, 3) % 2 if dtype == "bool" else
                                       np.arange(6).reshape(2, 3) - 2 * (dtype[0] != "u"), dtype)}},
                 accept=accept)
            for dtype in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64", "complex64", "complex128")
            for accept in ("application/json", "application/json+base64", "application/json+binref")
        ],
        Case("float-specials-json", "noop", "POST", "/apply",
             {"inputs": {"x": _b64([np.nan, np.inf, -np.inf, -0.0, 1e-310, 1e300], "float64")}},
             accept="application/json"),
        Case("float32-widened-json", "noop", "POST", "/apply", {"inputs": {"x": _b64([0.2, 1 / 3, 1e-7], "float32")}},
             accept="application/json"),
        Case("empty-array", "vectoradd", "POST", "/apply", {"inputs": {"a": [], "b": []}},
             accept="application/json+binref"),
        Case("zero-size-encoded", "noop", "POST", "/apply",
             {"inputs": {"x": {"shape": [2, 0], "dtype": "float32", "data": {"buffer": "", "encoding": "base64"}}}}),
    ]  # fmt: skip


def _test_endpoint_cases() -> list[Case]:
    cases = []
    for example in EXAMPLES:
        for file in sorted((TEST_CASES / example).glob("*.json")):
            spec = json.loads(file.read_text())
            cases.append(Case(f"test-{example}-{file.stem}", example, "POST", "/test", spec, settings={"debug": "1"}))
    spec = json.loads((TEST_CASES / "vectoradd" / "test_apply.json").read_text())
    cases += [
        Case("test-wrong-expectation", "vectoradd", "POST", "/test",
             {**spec, "expected_outputs": {"result": [5.0, 7.0, 10.0]}}, settings={"debug": "1"}),
        Case("test-unexpected-success", "vectoradd", "POST", "/test",
             {**spec, "expected_outputs": None, "expected_exception": "ValueError"}, settings={"debug": "1"}),
        Case("test-both-expectations", "vectoradd", "POST", "/test",
             {**spec, "expected_exception": "ValueError"}, settings={"debug": "1"}),
        Case("test-neither-expectation", "vectoradd", "POST", "/test",
             {**spec, "expected_outputs": None}, settings={"debug": "1"}),
        Case("test-unknown-keys-ignored", "vectoradd", "POST", "/test", {**spec, "comment": "x"},
             settings={"debug": "1"}),
    ]  # fmt: skip
    return cases


EXTRA = [*_binref_cases(), *_accept_cases(), *_status_cases(), *_body_cases(), *_array_cases(), *_test_endpoint_cases()]


@pytest.mark.parametrize("case", EXTRA, ids=[c.id for c in EXTRA])
def test_further_requests(servers, case):
    compare(case, servers)


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("settings", [{}, {"debug": "1"}], ids=["default", "debug"])
def test_openapi_document(servers, example, settings):
    sut, ref = servers.get(example, **settings), servers.reference(example, **settings)
    ours = requests.get(f"{sut.url}/openapi.json", timeout=30)
    theirs = requests.get(f"{ref.url}/openapi.json", timeout=30)
    assert (ours.status_code, ours.headers["content-type"]) == (theirs.status_code, theirs.headers["content-type"])
    difference = _first_difference(ours.json(), theirs.json())
    assert difference is None, f"{sut.backend} (left) differs from tesseract-runtime (right) at {difference}"


def test_run_directories_alike(servers):
    """Both servers leave the same files in a run directory (binref names aside)."""
    run_id = f"alike{uuid.uuid4().hex[:8]}"
    layouts = []
    for server in (servers.get("vectoradd"), servers.reference("vectoradd")):
        r = Case("", "vectoradd", "POST", "/jacobian", JAC, accept="application/json+binref",
                 params={"run_id": run_id}).send(server)  # fmt: skip
        assert r.status_code == 200
        run = server.output_path / f"run_{run_id}"
        layouts.append(sorted(re.sub(r"^[0-9a-f-]{36}\.bin$", "<uuid>.bin", str(p.relative_to(run)))
                              for p in run.rglob("*")))  # fmt: skip
    assert layouts[0] == layouts[1]
    assert "logs/tesseract.log" in layouts[1]
