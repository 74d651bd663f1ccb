"""The served runtime driven by tesseract-core 1.15.0's own SDK and by raw HTTP.

The runtime checks 1-38 (39 and 40 need a GPU and are not here),
with the acceptance vectors of §12 (V1-V9 vectoradd, U1-U7 univariate, M1-M5
meshstats). Test names carry the check number (`test_cNN_...`).

The server under test is the one --server-backend names (`tesscpp`: the C++
server serving examples/*; `python`: tesseract-runtime serving the equivalent
fixtures in tests/fixtures/python). `make test` runs this suite against both,
so the expectations written here are held to tesseract-runtime too.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import socket
import time
import uuid
from pathlib import Path

import lz4.frame
import numpy as np
import pytest
import requests
from pydantic import ValidationError
from tesseract_core import Tesseract
from tesseract_core.sdk.tesseract import HTTPClient, _decode_array

from conftest import EXAMPLES, TEST_CASES, free_port

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
PATHS = {
    "vectoradd": {"/apply", "/jacobian", "/health"},
    "univariate": {"/apply", "/abstract_eval", "/jacobian", "/jacobian_vector_product",
                   "/vector_jacobian_product", "/health"},
    "meshstats": {"/apply", "/abstract_eval", "/jacobian", "/health"},
    "noop": {"/apply", "/health"},
    "collections": {"/apply", "/health"},
}  # fmt: skip
FORMATS = ["json", "json+base64", "json+binref"]


# ----------------------------------------------------------------------------- helpers


def b64(values, dtype) -> dict:
    arr = np.asarray(values, dtype=dtype)
    return {"shape": list(arr.shape), "dtype": arr.dtype.name,
            "data": {"buffer": base64.b64encode(arr.tobytes()).decode(), "encoding": "base64"}}  # fmt: skip


def post(server, path: str, body=None, accept: str | None = None, params=None, data: bytes | None = None,
         headers: dict | None = None) -> requests.Response:  # fmt: skip
    h = {"Content-Type": "application/json"}
    if accept is not None:
        h["Accept"] = accept
    h.update(headers or {})
    payload = data if data is not None else json.dumps(body).encode()
    return requests.post(f"{server.url}{path}", data=payload, headers=h, params=params, timeout=120)


def decode(arraydict: dict, server) -> np.ndarray:
    return np.asarray(_decode_array(arraydict, output_path=server.output_path))


def same(actual, expected, dtype: str, shape=None) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected, dtype=dtype)
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    assert actual.shape == (expected.shape if shape is None else tuple(shape)), (actual.shape, expected.shape)
    assert actual.tobytes() == expected.tobytes(), (actual, expected)


def client(server, **kwargs) -> Tesseract:
    return Tesseract.from_url(server.url, server_output_path=server.output_path, **kwargs)


def record(tess: Tesseract) -> list[requests.Response]:
    """Every HTTP exchange `tess` (and its with_encoding views) makes from now on."""
    seen: list[requests.Response] = []
    tess._client._session.hooks["response"].append(lambda r, *args, **kwargs: seen.append(r))
    return seen


def run_dirs(server) -> set[str]:
    return {p.name for p in server.output_path.iterdir() if p.name.startswith("run_")}


def detail(response: requests.Response) -> list[dict]:
    assert response.status_code == 422, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    items = response.json()["detail"]
    assert isinstance(items, list) and items
    for item in items:
        assert isinstance(item["type"], str) and isinstance(item["loc"], list) and item["loc"][0] == "body", item
        assert isinstance(item.get("msg", ""), str)
    return items


def types_at(response: requests.Response) -> set[tuple]:
    return {(item["type"], tuple(item["loc"])) for item in detail(response)}


V1 = {"a": np.array([1, 2, 3], np.int64), "b": np.array([4, 5, 6], np.int64)}
I64_123 = b64([1, 2, 3], "int64")
I64_456 = b64([4, 5, 6], "int64")
EYE3_B64 = "AAAAAAAA8D8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADwPwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/"


def mesh_inputs(first_point=(0, 666, 0)) -> dict:
    """M1: the payload of meshstats' test_apply.json, as NumPy arrays."""
    return {"mesh": {
        "n_points": 5, "n_cells": 2,
        "points": np.array([first_point, [1, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 1]], np.float64),
        "num_points_per_cell": np.array([4, 4], np.int64),
        "cell_connectivity": np.array([0, 1, 2, 3, 1, 2, 3, 4], np.int64),
        "cell_data": {"temperature": np.array([[100, 105], [110, 115]], np.float64),
                      "pressure": np.array([[1, 1.2], [1.1, 1.3]], np.float64)},
        "point_data": {"displacement": np.array([[0.0, 0.1, 0.2]] * 5), "velocity": np.array([[1.0, 0.0, 0.0]] * 5)},
    }}  # fmt: skip


def mesh_lists(first_point=(0, 123, 0)) -> dict:
    """M2: every array as a plain JSON list."""
    return json.loads(json.dumps(mesh_inputs(first_point), default=lambda a: a.tolist()))


# ----------------------------------------------------------------------------- 1-9: health, OpenAPI


def test_c01_health(servers):
    server = servers.get("vectoradd")
    r = requests.get(f"{server.url}/health", timeout=30)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"status": "ok"}
    assert client(server).health() == {"status": "ok"}
    r = requests.post(f"{server.url}/health", timeout=30)
    assert r.status_code == 405
    assert r.json() == {"detail": "Method Not Allowed"}
    assert r.headers.get("allow") == "GET"


@pytest.mark.parametrize("example", EXAMPLES)
def test_c02_openapi_paths(servers, example):
    server = servers.get(example)
    r = requests.get(f"{server.url}/openapi.json", timeout=30)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    doc = r.json()
    assert doc["openapi"] == "3.1.0"
    assert set(doc["paths"]) == PATHS[example]
    assert set(doc["components"]["schemas"]) >= {"Apply_InputSchema", "Apply_OutputSchema", "ApplyInputSchema"}


def test_c02_openapi_paths_debug(servers):
    doc = requests.get(f"{servers.get('univariate', debug='1').url}/openapi.json", timeout=30).json()
    assert set(doc["paths"]) == PATHS["univariate"] | {"/test"}
    assert "/check_gpu_transport" not in doc["paths"] and "/openapi.json" not in doc["paths"]


def test_c03_capabilities(servers):
    tess = client(servers.get("noop"))
    doc = tess.openapi_schema
    assert doc["x-supported-output-formats"] == ["json", "json+base64", "json+binref"]
    assert doc["x-supported-gpu-transports"] == ["none"]
    assert doc["x-supported-compressions"] == ["none", "lz4"]
    caps = tess.server_capabilities
    assert (caps.output_formats, caps.gpu_transports, caps.compressions) == (
        ("json", "json+base64", "json+binref"), ("none",), ("none", "lz4"))  # fmt: skip
    with pytest.raises(ValueError, match="does not accept gpu_transport='cuda_ipc'"):
        tess.with_encoding(gpu_transport="cuda_ipc")


def test_c04_info_follows_env(servers):
    server = servers.get("noop", name="custom-name", version="9.8.7", description="line one\\nline two")
    info = requests.get(f"{server.url}/openapi.json", timeout=30).json()["info"]
    assert info["title"] == "custom-name"
    assert info["version"] == "9.8.7"
    assert info["description"] == "line one\nline two"


@pytest.mark.parametrize("example,inputs,outputs", [
    ("vectoradd", ["a", "b", "s", "normalize"], ["result"]),
    ("univariate", ["x", "y", "a", "b"], ["result"]),
    ("meshstats", ["mesh"], ["statistics"]),
    ("noop", ["x"], ["x"]),
])  # fmt: skip
def test_c05_field_declaration_order(servers, example, inputs, outputs):
    schemas = client(servers.get(example)).openapi_schema["components"]["schemas"]
    assert list(schemas["Apply_InputSchema"]["properties"]) == inputs
    assert list(schemas["Apply_OutputSchema"]["properties"]) == outputs


def test_c06_differentiable_arrays(servers):
    schemas = client(servers.get("vectoradd")).openapi_schema["components"]["schemas"]
    assert schemas["ApplyInputSchema"]["differentiable_arrays"] == {
        "a": {"shape": [None], "dtype": "float32"},
        "b": {"shape": [None], "dtype": "float32"},
        "s": {"shape": [], "dtype": "float32"},
    }
    assert schemas["ApplyOutputSchema"]["differentiable_arrays"] == {"result": {"shape": [None], "dtype": "float64"}}
    schemas = client(servers.get("meshstats")).openapi_schema["components"]["schemas"]
    assert schemas["ApplyInputSchema"]["differentiable_arrays"] == {
        "mesh.points": {"shape": [None, 3], "dtype": "float32"}
    }
    assert schemas["ApplyOutputSchema"]["differentiable_arrays"] == {
        "statistics.first_point_coordinates": {"shape": [3], "dtype": "float32"},
        "statistics.barycenter": {"shape": [3], "dtype": "float32"},
    }


def test_c07_field_order(servers):
    schemas = client(servers.get("vectoradd")).openapi_schema["components"]["schemas"]
    assert schemas["ApplyInputSchema"]["field_order"] == {"": ["a", "b", "s", "normalize"]}
    assert schemas["ApplyOutputSchema"]["field_order"] == {"": ["result"]}
    schemas = client(servers.get("meshstats")).openapi_schema["components"]["schemas"]
    assert schemas["ApplyInputSchema"]["field_order"] == {
        "": ["mesh"],
        "mesh": ["n_points", "n_cells", "points", "num_points_per_cell", "cell_connectivity", "cell_data",
                 "point_data"],
    }  # fmt: skip
    assert schemas["ApplyOutputSchema"]["field_order"] == {
        "": ["statistics"], "statistics": ["first_point_coordinates", "barycenter"]
    }


def _array_leaves(node, found: list) -> list:
    if isinstance(node, dict):
        if str(node.get("title", "")).startswith("EncodedArrayModel__"):
            found.append(node)
        for value in node.values():
            _array_leaves(value, found)
    elif isinstance(node, list):
        for value in node:
            _array_leaves(value, found)
    return found


@pytest.mark.parametrize("example", EXAMPLES)
def test_c08_array_flags(servers, example):
    schemas = client(servers.get(example)).openapi_schema["components"]["schemas"]
    leaves = _array_leaves(schemas, [])
    assert leaves
    for leaf in leaves:
        flags = ["DIFFERENTIABLE"] if leaf["title"].endswith("__DIFFERENTIABLE") else []
        assert leaf.get("array_flags") == flags, leaf["title"]
        assert leaf["properties"]["object_type"]["const"] == "array"
    if example == "vectoradd":
        assert schemas["Apply_InputSchema"]["properties"]["a"]["array_flags"] == ["DIFFERENTIABLE"]
    if example == "meshstats":
        mesh = schemas["Apply_VolumetricMeshData"]["properties"]
        assert mesh["points"]["array_flags"] == ["DIFFERENTIABLE"]
        assert mesh["num_points_per_cell"]["array_flags"] == []


@pytest.mark.parametrize("example", EXAMPLES)
def test_c09_available_endpoints(servers, example):
    tess = client(servers.get(example))
    assert {f"/{e}" for e in tess.available_endpoints} == PATHS[example]
    if example in ("noop", "meshstats"):
        with pytest.raises(NotImplementedError):
            tess.jacobian_vector_product({}, ["x"], ["x"], {})
    if example == "noop":
        with pytest.raises(NotImplementedError):
            tess.jacobian({"x": [1.0]}, ["x"], ["x"])


# ----------------------------------------------------------------------------- 10-16: output negotiation


def test_c10_apply_v1(servers):
    tess = client(servers.get("vectoradd"))
    seen = record(tess)
    out = tess.apply(V1)
    same(out["result"], [5, 7, 9], "float64")
    posts = [r for r in seen if r.request.method == "POST"]
    assert [r.request.headers["Accept"] for r in posts] == ["application/*; gpu_transport=none"]
    assert posts[0].headers["content-type"] == "application/json"  # the server's default format
    # V3: float64 inputs
    same(tess.apply({"a": np.array([7.0, 11, 15]), "b": np.array([7.0, 11, 15])})["result"], [14, 22, 30], "float64")
    # V4: normalised (computed in float32, widened)
    out = tess.apply({**V1, "normalize": True})["result"]
    assert out.dtype == np.float64 and out.shape == (3,)
    np.testing.assert_allclose(out, [0.4016096591949463, 0.5622535347938538, 0.7228974103927612], rtol=1e-6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_c11_apply_each_format(servers, fmt):
    server = servers.get("vectoradd")
    tess = client(server)
    seen = record(tess)
    view = tess.with_encoding(output_format=fmt)
    same(view.apply(V1)["result"], [5, 7, 9], "float64")
    r = seen[-1]
    assert r.request.headers["Accept"] == f"application/{fmt}; gpu_transport=none"
    assert r.headers["content-type"] == f"application/{fmt}"
    data = r.json()["result"]["data"]
    assert data["encoding"] == {"json": "json", "json+base64": "base64", "json+binref": "binref"}[fmt]
    assert "compression" not in data
    if fmt == "json+base64":
        assert data["buffer"] == "AAAAAAAAFEAAAAAAAAAcQAAAAAAAACJA"
    if fmt == "json":  # V2, byte for byte
        assert r.content == (
            b'{"result":{"object_type":"array","shape":[3],"dtype":"float64",'
            b'"data":{"buffer":[5.0,7.0,9.0],"encoding":"json"}}}'
        )


@pytest.mark.parametrize("fmt", ["json+base64", "json+binref"])
def test_c12_lz4(servers, fmt):
    server = servers.get("noop")
    tess = client(server)
    seen = record(tess)
    x = np.arange(3000, dtype=np.float32).reshape(30, 100) % 7
    out = tess.with_encoding(output_format=fmt, compression="lz4").apply({"x": x})
    same(out["x"], x, "float32")
    r = seen[-1]
    assert r.request.headers["Accept"] == f"application/{fmt}; gpu_transport=none; compression=lz4"
    data = r.json()["x"]["data"]
    assert data["compression"] == "lz4"
    if fmt == "json+binref":
        m = re.fullmatch(r"(run_[^/]+/[^:/]+\.bin):(\d+):(\d+)", data["buffer"])
        assert m, data["buffer"]
        raw = (server.output_path / m[1]).read_bytes()[int(m[2]) : int(m[2]) + int(m[3])]
    else:
        raw = base64.b64decode(data["buffer"])
    assert lz4.frame.decompress(raw) == x.tobytes()


def test_c13_unacceptable_accept(servers):
    server = servers.get("vectoradd")
    before = run_dirs(server)
    r = post(server, "/apply", {"inputs": {"a": [1], "b": [2]}}, accept="application/json+nonsense")
    assert r.status_code == 406
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"detail": {
        "message": "Cannot produce any encoding accepted by 'application/json+nonsense'",
        "available_formats": ["json", "json+base64", "json+binref"],
        "available_gpu_transports": ["none"],
        "available_compressions": ["none", "lz4"],
    }}  # fmt: skip
    assert run_dirs(server) == before  # nothing ran


@pytest.mark.parametrize("accept,fmt,compression", [
    (None, "json", None),
    ("", "json", None),
    ("*/*", "json", None),
    ("application/json+base64", "json+base64", None),
    ("application/*; gpu_transport=none", "json", None),
    ("application/json+base64; gpu_transport=none; compression=lz4", "json+base64", "lz4"),
    ("application/json, text/plain, */*", "json", None),
    ("application/msgpack;q=1, application/json+base64;q=0.5", "json+base64", None),
    ("application/msgpack;q=1, application/json+binref;q=0.5", "json+binref", None),
    ("application/json+base64;q=0.1, application/json+binref", "json+binref", None),
    ("text/json", "json", None),
    ('application/json+base64; compression="lz4"', "json+base64", "lz4"),
    ("application/json+base64; compression=none", "json+base64", None),
])  # fmt: skip
def test_c14_accept_variants(servers, accept, fmt, compression):
    server = servers.get("noop")
    headers = {"Content-Type": "application/json"}
    if accept is not None:
        headers["Accept"] = accept
    x = np.array([[1.5, -2.0], [0.25, 8.0]])
    r = requests.post(f"{server.url}/apply", data=json.dumps({"inputs": {"x": b64(x, "float64")}}),
                      headers=headers, timeout=30)  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == f"application/{fmt}"
    arraydict = r.json()["x"]
    assert arraydict["data"].get("compression") == compression
    assert list(arraydict) == ["object_type", "shape", "dtype", "data"]
    same(decode(arraydict, server), x, "float64")


@pytest.mark.parametrize("accept", [
    "application/json+base64; gpu_transport=cuda_ipc",
    "text/html",
    "application/json+base64; compression=LZ4",
    "application/json+base64; compression=gzip",
])  # fmt: skip
def test_c15_gpu_transport_and_bad_params_refused(servers, accept):
    r = post(servers.get("noop"), "/apply", {"inputs": {"x": [1.0]}}, accept=accept)
    assert r.status_code == 406, r.text
    assert r.json()["detail"]["message"] == f"Cannot produce any encoding accepted by {accept!r}"


@pytest.mark.parametrize("fmt", ["json", "json+base64", "json+binref"])
def test_c16_default_format_from_env(servers, fmt):
    server = servers.get("noop", output_format=fmt)
    r = requests.post(f"{server.url}/apply", json={"inputs": {"x": [1, 2]}}, timeout=30)
    assert r.status_code == 200
    assert r.headers["content-type"] == f"application/{fmt}"
    same(decode(r.json()["x"], server), [1, 2], "int64")
    # the SDK's from_url default (application/*) also gets the server's format
    same(client(server).apply({"x": np.array([3, 4])})["x"], [3, 4], "int64")


# ----------------------------------------------------------------------------- 17-25: inputs and errors


def _binref_file(input_path: Path, values, dtype, prefix=b"", suffix=b"", compress=False) -> tuple[str, int]:
    """Writes a binref input file into `input_path`; returns its name and the size of the array's bytes."""
    raw = np.asarray(values, dtype=dtype).tobytes()
    if compress:
        raw = lz4.frame.compress(raw)
    name = f"in_{uuid.uuid4().hex}.bin"
    (input_path / name).write_bytes(prefix + raw + suffix)
    return name, len(raw)


def _input_forms(server) -> dict[str, object]:
    """`a` = [1, 2, 3] in every form the server must accept."""
    name, _ = _binref_file(server.input_path, [1, 2, 3], "float32")
    off_name, _ = _binref_file(server.input_path, [1, 2, 3], "int16", prefix=b"\xff" * 16, suffix=b"junk")
    lz_name, lz_size = _binref_file(server.input_path, [1, 2, 3], "float64", prefix=b"\x00" * 5, compress=True)
    lz4_b64 = base64.b64encode(lz4.frame.compress(np.array([1, 2, 3], np.int32).tobytes())).decode()
    return {
        "plain_list": [1, 2, 3],
        "plain_floats": [1.0, 2.0, 3.0],
        "json": {"shape": [3], "dtype": "int64", "data": {"buffer": [1, 2, 3], "encoding": "json"}},
        "json_tagged": {"object_type": "array", "shape": [3], "dtype": "float64",
                        "data": {"buffer": [1.0, 2.0, 3.0], "encoding": "json"}},
        "base64": I64_123,
        "base64_tagged": {"object_type": "array", **b64([1, 2, 3], "float32")},
        "base64_uint8": b64([1, 2, 3], "uint8"),
        "base64_null_compression": {**I64_123, "data": {**I64_123["data"], "compression": None}},
        "base64_lz4": {"shape": [3], "dtype": "int32",
                       "data": {"buffer": lz4_b64, "encoding": "base64", "compression": "lz4"}},
        "binref": {"shape": [3], "dtype": "float32", "data": {"buffer": name, "encoding": "binref"}},
        "binref_offset0": {"shape": [3], "dtype": "float32", "data": {"buffer": f"{name}:0", "encoding": "binref"}},
        "binref_offset": {"object_type": "array", "shape": [3], "dtype": "int16",
                          "data": {"buffer": f"{off_name}:16", "encoding": "binref"}},
        "binref_absolute": {"shape": [3], "dtype": "float32",
                            "data": {"buffer": str(server.input_path / name), "encoding": "binref"}},
        "binref_lz4": {"shape": [3], "dtype": "float64",
                       "data": {"buffer": f"{lz_name}:5:{lz_size}", "encoding": "binref", "compression": "lz4"}},
    }  # fmt: skip


def test_c17_input_forms(servers):
    server = servers.get("vectoradd")
    for form, a in _input_forms(server).items():
        r = post(server, "/apply", {"inputs": {"a": a, "b": I64_456}}, accept="application/json+base64")
        if form == "binref_absolute" and server.backend == "tesscpp":
            # Deliberate difference (docs/compatibility.md): tesscpp confines
            # binref paths to the input directory; tesseract-core follows absolute ones.
            assert r.status_code == 422 and "absolute" in r.text, r.text
            continue
        assert r.status_code == 200, (form, r.text)
        assert r.json()["result"]["data"]["buffer"] == "AAAAAAAAFEAAAAAAAAAcQAAAAAAAACJA", form
    # plain scalars, and scalars as 0-d arraydicts
    for s in (2, 2.0, b64(2, "float64"), {"shape": [], "dtype": "int8", "data": {"buffer": 2, "encoding": "json"}}):
        r = post(server, "/apply", {"inputs": {"a": [1, 2, 3], "b": [4, 5, 6], "s": s}}, accept="application/json")
        assert r.status_code == 200, (s, r.text)
        assert r.json()["result"]["data"]["buffer"] == [6.0, 9.0, 12.0], s
    # the SDK itself: NumPy arrays (base64) and plain lists pass through unchanged
    out = client(server).apply({"a": np.array([1, 2, 3], np.uint16), "b": [4, 5, 6], "s": 1})
    same(out["result"], [5, 7, 9], "float64")
    noop = servers.get("noop")
    same(client(noop).apply({"x": 7})["x"], 7, "int64", shape=())
    same(client(noop).apply({"x": [True, False]})["x"], [True, False], "bool")


def test_c18_broadcasting(servers):
    server = servers.get("meshstats")
    inputs = mesh_lists()
    inputs["mesh"]["points"] = b64([[0], [1], [2], [3], [4]], "float32")  # (5, 1) into (None, 3)
    r = post(server, "/apply", {"inputs": inputs}, accept="application/json")
    assert r.status_code == 200, r.text
    stats = r.json()["statistics"]
    assert stats["first_point_coordinates"]["data"]["buffer"] == [0.0, 0.0, 0.0]
    assert stats["barycenter"]["data"]["buffer"] == [2.0, 2.0, 2.0]
    r = post(servers.get("vectoradd"), "/apply", {"inputs": {"a": [[1, 2, 3]], "b": [1, 2, 3]}})
    assert types_at(r) == {("array_dimensionality_mismatch", ("body", "inputs", "a"))}


def test_c19_casting(servers):
    vectoradd = servers.get("vectoradd")
    # int64 into float32: accepted (V1); float64 into an int32 field: refused
    r = post(vectoradd, "/apply", {"inputs": {"a": I64_123, "b": b64([4, 5, 6], "float64")}}, accept="application/json")
    assert r.status_code == 200 and r.json()["result"]["data"]["buffer"] == [5.0, 7.0, 9.0]
    inputs = mesh_lists()
    fractional = {"buffer": [0, 1, 2, 3, 1, 2, 3, 4.5], "encoding": "json"}
    inputs["mesh"]["cell_connectivity"] = {"shape": [8], "dtype": "float64", "data": fractional}
    r = post(servers.get("meshstats"), "/apply", {"inputs": inputs})
    assert {loc for _, loc in types_at(r)} == {("body", "inputs", "mesh", "cell_connectivity")}
    inputs["mesh"]["cell_connectivity"] = b64([0, 1, 2, 3, 1, 2, 3, 4], "float64")
    r = post(servers.get("meshstats"), "/apply", {"inputs": inputs})
    assert {loc for _, loc in types_at(r)} == {("body", "inputs", "mesh", "cell_connectivity")}
    r = post(vectoradd, "/apply", {"inputs": {"a": b64([1, 2, 3], "complex64"), "b": [1, 2, 3]}})
    assert {loc for _, loc in types_at(r)} == {("body", "inputs", "a")}


def test_c20_decode_errors(servers):
    server = servers.get("vectoradd")
    bad = {"shape": [1], "dtype": "float32", "data": {"buffer": "AA%A", "encoding": "base64"}}
    r = post(server, "/apply", {"inputs": {"a": bad, "b": [1]}})
    assert types_at(r) == {("array_decode_error", ("body", "inputs", "a"))}
    not_numeric = {"shape": [2], "dtype": "float32", "data": {"buffer": ["not", "numeric"], "encoding": "json"}}
    r = post(server, "/apply", {"inputs": {"a": not_numeric, "b": [1, 2]}})
    assert types_at(r) == {("array_decode_error", ("body", "inputs", "a"))}
    with pytest.raises(ValidationError) as info:
        client(server).apply({"a": not_numeric, "b": [1, 2]})
    assert "array_decode_error" in {e["type"] for e in info.value.errors()}


def test_c21_validator_v8(servers):
    server = servers.get("vectoradd")
    r = post(server, "/apply", {"inputs": {"a": [1, 2, 3], "b": [3, 4]}})
    (item,) = detail(r)
    assert (item["type"], item["loc"]) == ("value_error", ["body", "inputs"])
    assert item["msg"] == "Value error, a and b must have the same shape. Got (3,) and (2,) instead."
    with pytest.raises(ValidationError, match="a and b must have the same shape"):
        client(server).apply({"a": np.array([1, 2, 3]), "b": np.array([3, 4])})


def test_c22_extra_and_missing_keys(servers):
    server = servers.get("vectoradd")
    r = post(server, "/apply", {"inputs": {"a": [1], "b": [2]}, "what": {"is": "this"}})
    assert types_at(r) == {("extra_forbidden", ("body", "what"))}
    r = post(server, "/apply", {"inputs": {"a": [1], "b": [2], "extra": 1}})
    assert types_at(r) == {("extra_forbidden", ("body", "inputs", "extra"))}
    r = post(server, "/apply", {})
    assert types_at(r) == {("missing", ("body", "inputs"))}
    r = post(server, "/jacobian", {"inputs": {"a": [1], "b": [2]}})
    assert types_at(r) == {("missing", ("body", "jac_inputs")), ("missing", ("body", "jac_outputs"))}


def test_c23_malformed_json(servers):
    server = servers.get("vectoradd")
    r = post(server, "/apply", data=b'{"inputs": {"a": [1, 2,')
    (item,) = detail(r)
    assert item["type"] == "json_invalid" and item["msg"] == "JSON decode error"
    assert len(item["loc"]) == 2 and isinstance(item["loc"][1], int)
    r = post(server, "/apply", data=b"")
    assert types_at(r) == {("missing", ("body",))}


def _clash(server) -> str:
    """A run_id whose run directory cannot be made (a file is in the way): the endpoint fails server-side."""
    run_id = f"clash{uuid.uuid4().hex[:8]}"
    (server.output_path / f"run_{run_id}").write_text("not a directory")
    return run_id


def test_c24_server_error(servers):
    server = servers.get("vectoradd")
    run_id = _clash(server)
    r = post(server, "/apply", {"inputs": {"a": [1], "b": [2]}}, params={"run_id": run_id})
    assert r.status_code == 500
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.text == "Internal Server Error"
    with pytest.raises(RuntimeError, match="^Error 500 from Tesseract: Internal Server Error$"):
        client(server).apply({"a": [1], "b": [2]}, run_id=run_id)
    # debug on: the body says what went wrong
    server = servers.get("vectoradd", debug="1")
    run_id = _clash(server)
    r = post(server, "/apply", {"inputs": {"a": [1], "b": [2]}}, params={"run_id": run_id})
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text.strip() and r.text != "Internal Server Error"  # says what went wrong
    if server.backend in ("python", "tesscpp-py"):  # a Python traceback
        assert "Traceback" in r.text and run_id in r.text
    with pytest.raises(RuntimeError, match="^Error 500 from Tesseract: "):
        client(server).apply({"a": [1], "b": [2]}, run_id=run_id)


def test_c25_not_found(servers):
    server = servers.get("noop")
    for method in ("GET", "POST"):
        r = requests.request(method, f"{server.url}/no/such/path", timeout=30)
        assert r.status_code == 404
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {"detail": "Not Found"}
    r = requests.get(f"{server.url}/jacobian", timeout=30)  # noop has no jacobian
    assert r.status_code == 404


# ----------------------------------------------------------------------------- 26-31: differentiation, examples


def test_c26_jacobian_v5(servers):
    server = servers.get("vectoradd")
    tess = client(server)
    jac = tess.jacobian(V1, ["s", "a"], ["result"])
    assert set(jac) == {"result"} and set(jac["result"]) == {"s", "a"}
    same(jac["result"]["s"], [1, 2, 3], "float32")
    same(jac["result"]["a"], np.eye(3), "float64")
    r = post(server, "/jacobian", {"inputs": {"a": I64_123, "b": I64_456}, "jac_inputs": ["s", "a"],
                                   "jac_outputs": ["result"]}, accept="application/json+base64")  # fmt: skip
    assert r.json()["result"]["a"]["data"]["buffer"] == EYE3_B64
    assert r.json()["result"]["s"]["data"]["buffer"] == "AACAPwAAAEAAAEBA"
    # duplicates collapse (sets)
    jac = tess.jacobian(V1, ["b", "b"], ["result", "result"])
    same(jac["result"]["b"], np.eye(3), "float64")


def test_c27_bad_jacobian_paths(servers):
    vectoradd, univariate = client(servers.get("vectoradd")), client(servers.get("univariate"))
    for tess, jac_inputs, jac_outputs, field in [
        (vectoradd, ["invalid", "inputs"], ["result"], "jac_inputs"),  # V6
        (vectoradd, ["a"], ["invalid", "outputs"], "jac_outputs"),  # V7
        (univariate, ["hey"], ["result"], "jac_inputs"),  # U6
        (univariate, ["a"], ["result"], "jac_inputs"),  # not differentiable
        (vectoradd, [], ["result"], "jac_inputs"),  # empty
    ]:
        inputs = V1 if tess is vectoradd else {"x": 0.0, "y": 0.0}
        with pytest.raises(ValidationError) as info:
            tess.jacobian(inputs, jac_inputs, jac_outputs)
        assert {e["loc"][:2] for e in info.value.errors()} == {("body", field)}, (jac_inputs, jac_outputs)


def test_c28_univariate(servers):
    tess = client(servers.get("univariate"))
    scalar = lambda value: (value, "float32", ())  # noqa: E731
    checks = [
        (tess.apply({"x": 0.0, "y": 0.0})["result"], scalar(1.0)),  # U1
        (tess.jacobian({"x": 0.0, "y": 0.0}, ["x"], ["result"])["result"]["x"], scalar(-2.0)),  # U2
        (tess.jacobian({"x": 0.0, "y": 0.0}, ["y"], ["result"])["result"]["y"], scalar(0.0)),  # U3
        (tess.jacobian_vector_product({"x": 0.0, "y": 0.0}, ["x", "y"], ["result"], {"x": 1.0, "y": 0.0})["result"],
         scalar(-2.0)),  # U4
        (tess.apply({"x": 1.0, "y": 2.0})["result"], scalar(100.0)),  # U7
        (tess.jacobian({"x": 1.0, "y": 2.0}, ["x", "y"], ["result"])["result"]["x"], scalar(-400.0)),
        (tess.jacobian({"x": 1.0, "y": 2.0}, ["x", "y"], ["result"])["result"]["y"], scalar(200.0)),
    ]  # fmt: skip
    vjp = tess.vector_jacobian_product({"x": 0.0, "y": 0.0}, ["x", "y"], ["result"], {"result": 1.0})  # U5
    assert set(vjp) == {"x", "y"}
    checks += [(vjp["x"], scalar(-2.0)), (vjp["y"], scalar(0.0))]
    for actual, (value, dtype, shape) in checks:
        same(actual, value, dtype, shape)
    server = servers.get("univariate")
    r = post(server, "/apply", {"inputs": {"x": 0.0, "y": 0.0}}, accept="application/json+base64")
    assert r.json() == {"result": {"object_type": "array", "shape": [], "dtype": "float32",
                                   "data": {"buffer": "AACAPw==", "encoding": "base64"}}}  # fmt: skip
    r = post(server, "/apply", {"inputs": {"x": 0.0, "y": 0.0}}, accept="application/json")
    assert r.content == (
        b'{"result":{"object_type":"array","shape":[],"dtype":"float32","data":{"buffer":1.0,"encoding":"json"}}}'
    )


def test_c29_tangent_and_cotangent_keys(servers):
    server = servers.get("univariate")
    r = post(server, "/jacobian_vector_product", {"inputs": {}, "jvp_inputs": ["x"], "jvp_outputs": ["result"],
                                                  "tangent_vector": {"y": 1.0}})  # fmt: skip
    assert types_at(r) == {("value_error", ("body", "tangent_vector"))}
    r = post(server, "/vector_jacobian_product", {"inputs": {}, "vjp_inputs": ["x"], "vjp_outputs": ["result"],
                                                  "cotangent_vector": {"other": 1.0}})  # fmt: skip
    assert {loc[:2] for _, loc in types_at(r)} == {("body", "cotangent_vector")}
    with pytest.raises(ValidationError):
        client(server).jacobian_vector_product({"x": 0.0}, ["x", "y"], ["result"], {"x": 1.0})


def test_c30_meshstats(servers):
    server = servers.get("meshstats")
    tess = client(server)
    # M1
    stats = tess.apply(mesh_inputs())["statistics"]
    same(stats["first_point_coordinates"], [0, 666, 0], "float32")
    r = post(server, "/apply", {"inputs": mesh_lists((0, 666, 0))}, accept="application/json+base64")
    data = r.json()["statistics"]
    assert data["first_point_coordinates"]["data"]["buffer"] == "AAAAAACAJkQAAAAA"
    assert data["barycenter"]["data"]["buffer"] == "AAAAPzOzBUPNzEw+"
    # M2: plain lists
    stats = tess.apply(mesh_lists())["statistics"]
    same(stats["first_point_coordinates"], [0, 123, 0], "float32")
    same(stats["barycenter"], [0.5, 25.1, 0.2], "float32")
    # M3
    abstract = tess.abstract_eval({"mesh": {
        "n_points": 5, "n_cells": 2,
        "points": {"shape": [5, 3], "dtype": "float32"},
        "num_points_per_cell": {"shape": [2], "dtype": "float32"},
        "cell_connectivity": {"shape": [8], "dtype": "int32"},
        "cell_data": {"temperature": {"shape": [2, 2], "dtype": "float32"}},
        "point_data": {"velocity": {"shape": [5, 3], "dtype": "float32"}},
    }})  # fmt: skip
    vector = {"shape": [3], "dtype": "float32"}
    assert abstract == {"statistics": {"first_point_coordinates": vector, "barycenter": vector}}
    # M4
    jac = tess.jacobian(mesh_inputs(), ["mesh.points"], ["statistics.barycenter"])
    assert list(jac) == ["statistics.barycenter"] and list(jac["statistics.barycenter"]) == ["mesh.points"]
    expected = np.zeros((3, 5, 3))
    for i in range(3):
        expected[i, :, i] = 0.2
    same(jac["statistics.barycenter"]["mesh.points"], expected, "float64")
    # M5
    bad = mesh_lists()
    bad["mesh"]["n_cells"] = 3
    (item,) = detail(post(server, "/apply", {"inputs": bad}))
    assert (item["type"], item["loc"]) == ("value_error", ["body", "inputs", "mesh"])
    assert item["msg"] == "Value error, Length of num_points_per_cell must be 3"


def test_c31_abstract_eval_shape_mismatch(servers):
    server = servers.get("meshstats")
    body = {"inputs": {"mesh": {
        "n_points": 5, "n_cells": 2,
        "points": {"shape": [5, 4], "dtype": "float32"},
        "num_points_per_cell": {"shape": [2], "dtype": "float32"},
        "cell_connectivity": {"shape": [8], "dtype": "int32"},
        "cell_data": {}, "point_data": {},
    }}}  # fmt: skip
    r = post(server, "/abstract_eval", body)
    assert {loc for _, loc in types_at(r)} == {("body", "inputs", "mesh", "points")}


# ----------------------------------------------------------------------------- 32-38: runs, logs, /test, load


def test_c32_run_directories(servers):
    server = servers.get("meshstats")
    before = run_dirs(server)
    r = post(server, "/apply", {"inputs": mesh_lists()}, params={"run_id": "abc"})
    assert r.status_code == 200
    assert (server.output_path / "run_abc" / "logs" / "tesseract.log").is_file()
    assert run_dirs(server) - before == {"run_abc"}
    before = run_dirs(server)
    assert post(server, "/apply", {"inputs": mesh_lists()}).status_code == 200
    (new,) = run_dirs(server) - before
    assert re.fullmatch(f"run_{UUID4}", new), new
    assert (server.output_path / new / "logs" / "tesseract.log").is_file()
    before = run_dirs(server)
    body = {"inputs": {"mesh": {"n_points": 5, "n_cells": 2, "points": {"shape": [5, 3], "dtype": "float32"},
                                "num_points_per_cell": {"shape": [2], "dtype": "float32"},
                                "cell_connectivity": {"shape": [8], "dtype": "int32"},
                                "cell_data": {}, "point_data": {}}}}  # fmt: skip
    assert post(server, "/abstract_eval", body, params={"run_id": "abstract"}).status_code == 200
    assert requests.get(f"{server.url}/health", timeout=30).status_code == 200
    assert requests.get(f"{server.url}/openapi.json", timeout=30).status_code == 200
    r = post(server, "/apply", {"inputs": {}}, params={"run_id": "invalid"})  # 422: never ran
    assert r.status_code == 422
    assert run_dirs(server) == before


def test_c33_stream_logs(servers):
    # The examples print nothing themselves; with profiling on, the runtime
    # writes its statistics into the run's log, which the SDK tails.
    server = servers.get("vectoradd", profiling="1")
    lines: list[str] = []
    tess = client(server)
    tess._stream_logs = lines.append  # what from_image(stream_logs=...) sets; from_url has no argument for it
    same(tess.apply(V1)["result"], [5, 7, 9], "float64")
    assert "--- Profiling Statistics ---" in lines, lines[:20]
    lines.clear()
    jac = tess.jacobian(V1, ["a"], ["result"], run_id=f"stream{uuid.uuid4().hex[:6]}")
    same(jac["result"]["a"], np.eye(3), "float64")
    assert "--- Profiling Statistics ---" in lines


def test_c34_binref_layout(servers):
    server = servers.get("vectoradd")
    tess = client(server)
    seen = record(tess)
    run_id = f"binref{uuid.uuid4().hex[:8]}"
    jac = tess.with_encoding(output_format="json+binref").jacobian(V1, ["a", "b", "s"], ["result"], run_id=run_id)
    same(jac["result"]["a"], np.eye(3), "float64")
    same(jac["result"]["b"], np.eye(3), "float64")
    same(jac["result"]["s"], [1, 2, 3], "float32")
    arrays = seen[-1].json()["result"]
    parts = {}
    for name, arraydict in arrays.items():
        m = re.fullmatch(f"run_{run_id}/({UUID4})\\.bin:(\\d+)", arraydict["data"]["buffer"])
        assert m, arraydict["data"]["buffer"]
        nbytes = int(np.prod(arraydict["shape"])) * np.dtype(arraydict["dtype"]).itemsize
        parts[name] = (m[1], int(m[2]), nbytes)
    assert len({f for f, _, _ in parts.values()}) == 1  # one file per response
    spans = sorted((offset, size) for _, offset, size in parts.values())
    position = 0
    for offset, size in spans:  # appended one after another from offset 0
        assert offset == position, spans
        position += size
    file = server.output_path / f"run_{run_id}" / f"{next(iter(parts.values()))[0]}.bin"
    assert file.stat().st_size == position


def _load_specs(example: str) -> list[tuple[str, dict]]:
    files = sorted((TEST_CASES / example).glob("*.json"))
    assert files, f"no test cases in {TEST_CASES / example}"
    return [(f.name, json.loads(f.read_text())) for f in files]


@pytest.mark.parametrize("example", EXAMPLES)
def test_c35_test_endpoint(servers, example):
    server = servers.get(example, debug="1")
    tess = client(server)
    assert "test" in tess.available_endpoints
    for name, spec in _load_specs(example):
        r = post(server, "/test", spec)
        assert r.status_code == 200, (name, r.text)
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {"status": "passed", "message": "", "endpoint": spec["endpoint"]}, name
        tess.test(spec)
    # deliberately wrong: a changed expected value, and an exception that does not come
    name, spec = next((n, s) for n, s in _load_specs(example) if s["expected_outputs"] is not None)
    wrong = json.loads(json.dumps(spec))
    _perturb(wrong["expected_outputs"])
    body = post(server, "/test", wrong).json()
    assert body["status"] == "failed" and body["message"] and body["endpoint"] == spec["endpoint"], (name, body)
    with pytest.raises(AssertionError):
        tess.test(wrong)
    wrong = {**spec, "expected_outputs": None, "expected_exception": "ValueError"}
    assert post(server, "/test", wrong).json()["status"] == "failed"
    # exactly one of expected_outputs / expected_exception
    r = post(server, "/test", {**spec, "expected_exception": "ValueError"})
    assert r.status_code == 422


def _perturb(tree) -> bool:
    """Changes the first array value in `tree` (in place) well beyond the default tolerances."""
    if isinstance(tree, dict) and tree.get("object_type") == "array":
        arr = np.asarray(_decode_array(tree)).copy()
        arr.reshape(-1)[0] += 1
        tree["data"] = {"buffer": base64.b64encode(arr.tobytes()).decode(), "encoding": "base64"}
        return True
    if isinstance(tree, dict):
        return any(_perturb(v) for v in tree.values())
    return False


def test_c35_test_endpoint_absent_without_debug(servers):
    server = servers.get("vectoradd")
    name, spec = _load_specs("vectoradd")[0]
    r = post(server, "/test", spec)
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
    tess = client(server)
    assert "test" not in tess.available_endpoints
    with pytest.raises(NotImplementedError):
        tess.test(spec)


def test_c36_profiling(servers):
    server = servers.get("vectoradd", profiling="1")
    run_id = f"prof{uuid.uuid4().hex[:8]}"
    assert post(server, "/apply", {"inputs": {"a": [1], "b": [2]}}, params={"run_id": run_id}).status_code == 200
    log = (server.output_path / f"run_{run_id}" / "logs" / "tesseract.log").read_text()
    assert "--- Profiling Statistics ---" in log
    plain = servers.get("vectoradd")
    run_id = f"noprof{uuid.uuid4().hex[:8]}"
    assert post(plain, "/apply", {"inputs": {"a": [1], "b": [2]}}, params={"run_id": run_id}).status_code == 200
    assert "Profiling" not in (plain.output_path / f"run_{run_id}" / "logs" / "tesseract.log").read_text()


def test_c37_sequential_calls_one_session(servers):
    server = servers.get("univariate")
    tess = client(server)
    seen = record(tess)
    for i in range(100):
        x = float(i % 7) / 4
        out = tess.apply({"x": x, "y": 0.5})["result"]
        assert out.dtype == np.float32 and out.shape == ()
        np.testing.assert_allclose(out, (1 - x) ** 2 + 100 * (0.5 - x * x) ** 2, rtol=1e-5)
    assert len([r for r in seen if r.request.method == "POST"]) == 100
    # the same pooled connection served all of them (keep-alive)
    pool = next(iter(tess._client._session.adapters["http://"].poolmanager.pools._container.values()))
    assert pool.num_connections == 1, pool.num_connections


def test_c37_idle_gap_longer_than_keepalive(servers, backend):
    """An idle gap longer than the server's keep-alive: the server closes the connection, the next call works."""
    if backend != "python":  # (tesscpp serve --timeout-keep-alive, as tests/conformance/test_http_server.py)
        server, gap = servers.fresh("univariate", cli_args=["--timeout-keep-alive", "2"]), 3.5
    else:  # uvicorn's timeout_keep_alive, fixed at 60 s by tesseract-runtime serve
        server, gap = servers.get("univariate"), 62
    tess = client(server)
    same(tess.apply({"x": 1.0, "y": 2.0})["result"], 100.0, "float32", ())
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while not (answer.endswith(b"}") and b"\r\n\r\n" in answer):  # the whole {"status":"ok"} answer
            chunk = raw.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        time.sleep(gap)
        # The server has closed the idle connection by now: end of stream at
        # once (a server that has not would make this time out).
        raw.settimeout(0.5)
        assert raw.recv(65536) == b""
    # The SDK's pooled connection was closed the same way; its next call works.
    same(tess.apply({"x": 1.0, "y": 2.0})["result"], 100.0, "float32", ())
    assert server.alive()


LARGE_N = 200 * 2**20 // 8  # 200 MiB of float64


@pytest.mark.large
@pytest.mark.parametrize("fmt", ["json+base64", "json+binref"])
def test_c38_large_array_round_trip(servers, fmt):
    server = servers.get("noop")
    x = np.random.default_rng(38).standard_normal(LARGE_N)
    x[::1000] = np.arange(len(x[::1000]))  # distinct marks along the array
    tess = client(server)
    if fmt == "json+binref":
        # binref inputs as from_image sets them up: the SDK writes into the server's input dir
        tess._client = HTTPClient(server.url, output_path=server.output_path, input_path=server.input_path)
    seen = record(tess)
    out = tess.with_encoding(output_format=fmt).apply({"x": x})["x"]
    assert out.dtype == np.float64 and out.shape == x.shape
    assert np.array_equal(out, x)
    if fmt == "json+binref":
        _remove_outputs(server, seen[-1])


def _remove_outputs(server, response: requests.Response) -> None:
    """Deletes the binref files of a large response (the session's temp dirs are kept)."""
    for arraydict in response.json().values():
        if arraydict["data"]["encoding"] == "binref":
            (server.output_path / arraydict["data"]["buffer"].split(":")[0]).unlink(missing_ok=True)


@pytest.mark.large
def test_c38_binref_rotates_files_past_100_mib(servers):
    # vectoradd's jacobian with n = 3700: d/da and d/db are 3700^2 float64 each
    # (109.5 MB > 100 MiB), so the second one starts a new file.
    server = servers.get("vectoradd")
    n = 3700
    tess = client(server)
    seen = record(tess)
    a = np.arange(n, dtype=np.float32)
    jac = tess.with_encoding(output_format="json+binref").jacobian({"a": a, "b": a}, ["a", "b"], ["result"])
    for name in ("a", "b"):
        block = jac["result"][name]
        assert block.shape == (n, n) and block.dtype == np.float64
        assert np.array_equal(np.diag(block), np.ones(n)) and np.count_nonzero(block) == n
    buffers = [arr["data"]["buffer"] for arr in seen[-1].json()["result"].values()]
    files = {b.rsplit(":", 1)[0] for b in buffers}
    offsets = {int(b.rsplit(":", 1)[1]) for b in buffers}
    assert len(files) == 2 and offsets == {0}, buffers
    for file in files:
        (server.output_path / file).unlink()


# ----------------------------------------------------------------------------- tesscpp CLI contract


@pytest.mark.tesscpp_only
def test_cli_serving_line_and_port(servers):
    # A port chosen here, not by the kernel: another process may bind it before
    # the server does, which the server reports; then another one is tried.
    for attempt in range(3):
        port = free_port()
        try:
            server = servers.fresh("noop", port=port)
            break
        except AssertionError as e:
            if "Address already in use" not in str(e) or attempt == 2:
                raise
    assert server.url == f"http://127.0.0.1:{port}"
    lines = server.stdout_path.read_text().splitlines()
    assert f"tesscpp: serving noop on http://127.0.0.1:{port}" in lines
    assert requests.get(f"{server.url}/health", timeout=30).json() == {"status": "ok"}


@pytest.mark.tesscpp_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cli_signal_exits_cleanly(servers, sig):
    server = servers.fresh("vectoradd")
    assert requests.get(f"{server.url}/health", timeout=30).status_code == 200
    assert server.stop(sig, timeout=15) == 0, server.logs()


@pytest.mark.tesscpp_only
def test_cli_flags_win_over_env(servers, tmp_path: Path):
    flag_out, flag_in = tmp_path / "flag_out", tmp_path / "flag_in"
    flag_out.mkdir()
    flag_in.mkdir()
    server = servers.fresh(
        "vectoradd",
        settings={"output_format": "json", "debug": "0"},
        cli_args=["--output-format", "json+base64", "--debug", "--output-path", str(flag_out),
                  "--input-path", str(flag_in), "--num-workers", "1"],
    )  # fmt: skip
    r = requests.post(f"{server.url}/apply", json={"inputs": {"a": [1, 2, 3], "b": [4, 5, 6]}},
                      params={"run_id": "flags"}, timeout=30)  # fmt: skip
    assert r.headers["content-type"] == "application/json+base64"
    assert (flag_out / "run_flags").is_dir() and not (server.output_path / "run_flags").exists()
    assert "/test" in requests.get(f"{server.url}/openapi.json", timeout=30).json()["paths"]
    name, _ = _binref_file(flag_in, [1, 2, 3], "float32")
    a = {"shape": [3], "dtype": "float32", "data": {"buffer": name, "encoding": "binref"}}
    r = post(server, "/apply", {"inputs": {"a": a, "b": [4, 5, 6]}}, accept="application/json")
    assert r.status_code == 200 and r.json()["result"]["data"]["buffer"] == [5.0, 7.0, 9.0]


@pytest.mark.tesscpp_only
def test_cli_output_format_flag_json_binref(servers):
    server = servers.fresh("noop", cli_args=["--output-format", "json+binref"])
    r = requests.post(f"{server.url}/apply", json={"inputs": {"x": [1.5]}}, timeout=30)
    assert r.headers["content-type"] == "application/json+binref"
    same(decode(r.json()["x"], server), [1.5], "float64")
