"""tesscpp's array codecs against tesseract-core 1.15.0's, on random arrays.

The golden vectors (tests/golden/generate.py) pin fixed cases byte for byte in
the C++ unit tests. This suite runs the live reference on fresh random arrays:
tesscpp must read what tesseract-core's SDK writes, write what tesseract-core's
server and SDK decode to the same values, and write the very bytes
tesseract-core writes where the format is deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ConfigDict, create_model
from tesseract_core.runtime.file_interactions import output_to_bytes
from tesseract_core.runtime.schema_types import Array
from tesseract_core.sdk.tesseract import _decode_array, _encode_array

from conftest import run_tool

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip

# name -> (tesseract-core output format, compression, tesscpp-codec arguments)
FORMATS = {
    "json": ("json", None, ["--encoding", "json"]),
    "base64": ("json+base64", None, ["--encoding", "base64"]),
    "base64_lz4": ("json+base64", "lz4", ["--encoding", "base64", "--compression", "lz4"]),
    "binref": ("json+binref", None, ["--encoding", "binref"]),
    "binref_lz4": ("json+binref", "lz4", ["--encoding", "binref", "--compression", "lz4"]),
}


def random_arrays(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {}
    for name in DTYPES:
        dt = np.dtype(name)
        for shape in [(), (0,), (int(rng.integers(1, 40)),), (3, int(rng.integers(1, 9))), (2, 0, 2)]:
            n = int(np.prod(shape))
            if dt.kind == "b":
                values = rng.integers(0, 2, n).astype(bool)
            elif dt.kind in "iu":
                info = np.iinfo(dt)
                values = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            elif dt.kind == "f":
                with np.errstate(over="ignore"):  # float16 overflows to inf on purpose
                    values = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dt)
            else:
                values = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
            arrays[f"{name}_{len(shape)}d_{n}"] = values.reshape(shape)
    big = rng.standard_normal((128, 257)).astype(np.float32)
    big[::7] = 0.0  # some compressible runs
    arrays["float32_big"] = big
    return arrays


def model_for(arrays: dict[str, np.ndarray]):
    fields = dict.fromkeys(arrays, (Array[..., None], ...))
    return create_model("Arrays", __config__=ConfigDict(arbitrary_types_allowed=True), **fields)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(params=[1, 2, 3], ids=lambda s: f"seed{s}")
def arrays(request) -> dict[str, np.ndarray]:
    return random_arrays(request.param)


def sdk_request(arrays: dict[str, np.ndarray]) -> bytes:
    """A request body as tesseract-core's SDK encodes it (no object_type, base64)."""
    encoded = {name: _encode_array(arr, "base64") for name, arr in arrays.items()}
    return json.dumps(encoded, default=list).encode()


@pytest.mark.parametrize("fmt", FORMATS)
def test_tesseract_core_decodes_our_output(fmt, arrays, codec_tool, tmp_path: Path):
    core_format, compression, args = FORMATS[fmt]
    request = tmp_path / "request.json"
    request.write_bytes(sdk_request(arrays))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    body = run_tool(codec_tool, "reencode", *args, "--binref-out", str(out_dir), str(request))

    Model = model_for(arrays)  # noqa: N806 - a class
    # What tesseract-core itself gets from its own encoder for the same arrays:
    # the json format loses inf (written as null), so compare against that.
    core_dir = tmp_path / "core"
    core_dir.mkdir()
    core_body = output_to_bytes(Model(**arrays), core_format, base_dir=core_dir, compression=compression)
    expected = Model.model_validate_json(core_body, context={"base_dir": str(core_dir)})

    # Each of tesseract-core's decoders -- the server's (pydantic validation) and
    # the SDK's -- must read our body exactly as it reads its own. (They differ
    # from each other on json uint64 above 2**63, where the server rounds.)
    decoded = Model.model_validate_json(body, context={"base_dir": str(out_dir)})
    raw, core_raw = json.loads(body), json.loads(core_body)
    for name in arrays:
        assert same(getattr(decoded, name), np.asarray(getattr(expected, name))), name
        assert same(
            _decode_array(raw[name], output_path=out_dir), _decode_array(core_raw[name], output_path=core_dir)
        ), name

    if not fmt.startswith("binref"):
        # Deterministic formats: the bytes are tesseract-core's bytes.
        assert body == core_body


def test_we_read_what_the_sdk_writes(arrays, codec_tool, tmp_path: Path):
    request = tmp_path / "request.json"
    request.write_bytes(sdk_request(arrays))
    body = run_tool(codec_tool, "reencode", "--encoding", "base64", str(request))
    raw = json.loads(body)
    for name, arr in arrays.items():
        assert raw[name]["object_type"] == "array"
        assert same(_decode_array(raw[name]), arr), name


def test_we_read_tesseract_core_binref_output(arrays, codec_tool, tmp_path: Path):
    Model = model_for(arrays)  # noqa: N806 - a class
    for compression in (None, "lz4"):
        body = output_to_bytes(Model(**arrays), "json+binref", base_dir=tmp_path, compression=compression)
        response = tmp_path / "response.json"
        response.write_bytes(body)
        ours = run_tool(codec_tool, "reencode", "--encoding", "base64", "--binref-in", str(tmp_path), str(response))
        raw = json.loads(ours)
        for name, arr in arrays.items():
            assert same(_decode_array(raw[name]), arr), (compression, name)


def test_bad_input_is_refused_with_a_message(codec_tool, tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": {"shape": [2], "dtype": "float32", "data": {"buffer": "AAAA", "encoding": "base64"}}}')
    with pytest.raises(AssertionError, match="buffer holds 3 bytes, but a float32 array of shape"):
        run_tool(codec_tool, "reencode", str(bad))
