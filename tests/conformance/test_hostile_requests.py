"""Request bodies written to break a server, answered as tesseract-runtime answers them.

Each body below attacks a place where request data crosses from the wire into
C++ and on into Python: integers beyond 64 bits in shapes, strides and values,
numbers beyond the double range, NaN and Infinity where integers belong,
nesting deeper than either JSON reader allows, invalid UTF-8 and lone
surrogates, huge declared shapes, unknown encodings, dtypes and compressions,
cuda_ipc descriptors on a server without a device, binref paths that leave the
input directory or name devices.

--server-backend=tesscpp-py: `tesscpp serve tesseract_api.py` must answer
each exactly as tesseract-runtime serving the same module does (status and
bytes), and still be serving afterwards. One of these bodies (a shape of
1227895864076683183925493760) used to end the process (issue 60).
--server-backend=tesscpp: the C++ vectoradd example may word its 4xx
differently, but never answers 5xx or anything but JSON in UTF-8, and never
stops serving.
"""

from __future__ import annotations

import json

import pytest
import requests

WIDE = 1227895864076683183925493760  # beyond 64 bits: no int64, no uint64


def _arraydict(**fields) -> dict:
    return {"object_type": "array", "shape": [1], "dtype": "float32",
            "data": {"buffer": [1.0], "encoding": "json"}, **fields}  # fmt: skip


def _vectoradd(a) -> str:
    return json.dumps({"inputs": {"a": a, "b": [1.0], "s": 1.0}})


def _raw(a_text: str, s_text: str = "1.0") -> str:
    return '{"inputs": {"a": ' + a_text + ', "b": [1.0], "s": ' + s_text + "}}"


HOSTILE: dict[str, str | bytes] = {
    "wide-int-shape": _vectoradd(_arraydict(shape=[WIDE], data={"buffer": "AAAA", "encoding": "base64"})),
    "wide-int-shape-json": _vectoradd(_arraydict(shape=[WIDE])),
    "wide-int-stride": _vectoradd(_arraydict(strides=[WIDE])),
    "wide-int-value": _vectoradd([WIDE]),
    "wide-int-scalar": _raw("[1.0]", str(WIDE)),
    "wide-negative-scalar": _raw("[1.0]", str(-WIDE)),
    "beyond-double": _raw("[1.0]", "1" + "0" * 400),
    "wide-int-in-buffer": _vectoradd(_arraydict(dtype="int64", data={"buffer": [WIDE], "encoding": "json"})),
    "huge-declared-shape": _vectoradd(_arraydict(shape=[2**40, 2**40])),
    "huge-shape-short-buffer": _vectoradd(
        _arraydict(shape=[2**62], data={"buffer": "AAAAAA==", "encoding": "base64"})),
    "negative-shape": _vectoradd(_arraydict(shape=[-1])),
    "float-shape": _vectoradd(_arraydict(shape=[1.5])),
    "nan-shape": _raw('{"object_type": "array", "shape": [NaN], "dtype": "float32", '
                      '"data": {"buffer": [1.0], "encoding": "json"}}'),
    "infinity-shape": _raw('{"object_type": "array", "shape": [Infinity], "dtype": "float32", '
                           '"data": {"buffer": [1.0], "encoding": "json"}}'),
    "nan-values": _raw("[NaN]", "-Infinity"),
    "nesting-5000": _raw("[" * 5000 + "]" * 5000),
    "nesting-3000-dicts": _raw('{"x":' * 3000 + "1" + "}" * 3000),
    "nesting-300": _raw("[" * 300 + "1" + "]" * 300),
    "lone-surrogate-key": '{"inputs": {"\\ud800": 1, "a": [1.0], "b": [1.0], "s": 1.0}}',
    "lone-surrogate-value": _raw("[1.0]", '"\\udc00"'),
    "lone-surrogate-dtype": _raw('{"object_type": "array", "shape": [1], "dtype": "\\ud800", '
                                 '"data": {"buffer": [1.0], "encoding": "json"}}'),
    "invalid-utf8-value": b'{"inputs": {"a": [1.0], "b": [1.0], "s": "\xff\xfe"}}',
    "invalid-utf8-key": b'{"inputs": {"\xc3\x28": 1, "a": [1.0], "b": [1.0], "s": 1.0}}',
    "utf16-body": _vectoradd([1.0]).encode("utf-16"),
    "nul-in-key": '{"inputs": {"a\\u0000": 1, "a": [1.0], "b": [1.0], "s": 1.0}}',
    "unknown-encoding": _vectoradd(_arraydict(data={"buffer": "AAAA", "encoding": "rot13"})),
    "unknown-dtype": _vectoradd(_arraydict(dtype="float128")),
    "unknown-compression": _vectoradd(
        _arraydict(data={"buffer": "AAAAAA==", "encoding": "base64", "compression": "zstd"})),
    "corrupt-lz4": _vectoradd(_arraydict(data={"buffer": "AAAAAA==", "encoding": "base64", "compression": "lz4"})),
    "cuda-ipc-without-device": _vectoradd(
        _arraydict(data={"buffer": {"handle": "AAAA", "offset": 0, "device": 0}, "encoding": "cuda_ipc"})),
    "cuda-ipc-string": _vectoradd(_arraydict(data={"buffer": "AAAA", "encoding": "cuda_ipc"})),
    "binref-missing-file": _vectoradd(_arraydict(data={"buffer": "nothere.bin:0", "encoding": "binref"})),
    "binref-wide-offset": _vectoradd(_arraydict(data={"buffer": f"x.bin:{WIDE}", "encoding": "binref"})),
    "binref-dev-zero": _vectoradd(_arraydict(shape=[2**40], data={"buffer": "/dev/zero:0", "encoding": "binref"})),
    "binref-no-offset": _vectoradd(_arraydict(data={"buffer": "abc", "encoding": "binref"})),
    "buffer-number": _vectoradd(_arraydict(data={"buffer": 5, "encoding": "base64"})),
    "buffer-ragged": _vectoradd(_arraydict(data={"buffer": [[1.0], [1.0, 2.0]], "encoding": "json"})),
    "buffer-strings": _vectoradd(_arraydict(data={"buffer": ["x"], "encoding": "json"})),
    "int8-overflow": _vectoradd(_arraydict(dtype="int8", data={"buffer": [1000], "encoding": "json"})),
    "top-level-list": "[1, 2, 3]",
    "top-level-nan": "NaN",
    "inputs-null": '{"inputs": null}',
    "trailing-garbage": _raw("[1.0]") + " x",
    "long-key": json.dumps({"inputs": {"k" * 100_000: 1, "a": [1.0], "b": [1.0], "s": 1.0}}),
    "many-keys": json.dumps({"inputs": {**{f"k{i}": i for i in range(20_000)}, "a": [1.0], "b": [1.0], "s": 1.0}}),
}  # fmt: skip


# Bodies of other content types, which FastAPI hands to validation as they are.
OTHER_TYPES: dict[str, tuple[str | None, bytes]] = {
    "text-plain": ("text/plain", _vectoradd([1.0]).encode()),
    "text-plain-not-utf8": ("text/plain", b'{"inputs": {"a": ["\xe9"]}}'),
    "no-content-type-not-utf8": (None, b"\xff\xfe\x00"),
    "json-suffix-not-utf8": ("application/vnd.api+json", b'{"inputs": "\xc3\x28"}'),
}


def _post(url: str, body: str | bytes, content_type: str | None = "application/json") -> requests.Response:
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    # requests sends no Content-Type for bytes unless told, which is what None means here.
    headers = {} if content_type is None else {"Content-Type": content_type}
    return requests.post(f"{url}/apply", data=data, headers=headers, timeout=120)


def _answer(server, body: str | bytes, content_type: str | None = "application/json") -> tuple[int, bytes]:
    """Status and body; messages about binref files name each server's own input directory."""
    answer = _post(server.url, body, content_type)
    return answer.status_code, answer.content.replace(str(server.input_path).encode(), b"<input>")


CASES = [(body, "application/json") for body in HOSTILE.values()] + [(b, t) for t, b in OTHER_TYPES.values()]
IDS = list(HOSTILE) + list(OTHER_TYPES)


@pytest.mark.parametrize(("body", "content_type"), CASES, ids=IDS)
def test_a_python_module_answers_as_tesseract_runtime(servers, backend, body, content_type):
    if backend != "tesscpp-py":
        pytest.skip("compares `tesscpp serve tesseract_api.py` with tesseract-runtime (--server-backend=tesscpp-py)")
    ours, theirs = servers.get("vectoradd"), servers.reference("vectoradd")
    mine, reference = _answer(ours, body, content_type), _answer(theirs, body, content_type)
    assert mine == reference, f"\nours:   {mine[1][:1500]!r}\ntheirs: {reference[1][:1500]!r}"
    assert ours.alive() and requests.get(f"{ours.url}/health", timeout=30).status_code == 200, ours.logs()


@pytest.mark.parametrize(("body", "content_type"), CASES, ids=IDS)
def test_a_cpp_component_refuses_without_failing(servers, backend, body, content_type):
    if backend != "tesscpp":
        pytest.skip("the C++ example's answers (--server-backend=tesscpp)")
    server = servers.get("vectoradd")
    answer = _post(server.url, body, content_type)
    assert answer.status_code < 500, answer.text[:2000]
    assert answer.headers["content-type"] == "application/json"
    parsed = json.loads(answer.content.decode("utf-8"))  # strict: JSON in UTF-8, whatever the request held
    assert answer.status_code == 200 or "detail" in parsed
    assert server.alive() and requests.get(f"{server.url}/health", timeout=30).status_code == 200, server.logs()
