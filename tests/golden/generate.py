#!/usr/bin/env python3
"""Writes the golden vectors in tests/data/golden/ with the real Python stack.

Everything here is produced by the reference implementation and its libraries
(numpy, pybase64, python-lz4, tesseract-core 1.15.0), so the C++ tests compare
tesscpp against the real thing rather than against our own reading of it.

    .venv/bin/python tests/golden/generate.py

Outputs (all small):
  dtype_casts.txt          numpy can_cast for every dtype pair ("safe" / "same_kind")
  base64_vectors.txt       "<hex bytes> <pybase64.b64encode_as_string>" for random inputs
  base64_strict.txt        "<repr of input> OK <hex>" or "... ERR" under b64decode(validate=True)
  lz4/<name>.raw, .lz4     python-lz4 lz4.frame.compress outputs and their inputs
  docs/<format>.json       one response body per output format, written by tesseract-core's
                           own encoder (output_to_bytes) for the arrays below
  docs/<format>.expected   what tesseract-core decodes from that body: a JSON object
                           {field: {"dtype", "shape", "hex"}} (checked against the SDK decoder too)
  docs/binref/             the binref files the json+binref bodies point into
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import lz4.frame
import numpy as np
import pybase64
from pydantic import ConfigDict, create_model
from tesseract_core.runtime.file_interactions import output_to_bytes
from tesseract_core.runtime.schema_types import Array
from tesseract_core.sdk.tesseract import _decode_array

OUT = Path(__file__).resolve().parents[1] / "data" / "golden"

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def write_casts() -> None:
    lines = []
    for casting in ("safe", "same_kind"):
        for a in DTYPES:
            allowed = " ".join(b for b in DTYPES if np.can_cast(a, b, casting))
            lines.append(f"{casting} {a} {allowed}")
    (OUT / "dtype_casts.txt").write_text("\n".join(lines) + "\n")


def write_base64() -> None:
    rng = np.random.default_rng(64)
    sizes = list(range(70)) + [95, 96, 97, 255, 256, 1000, 4097]
    lines = []
    for n in sizes:
        raw = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        lines.append(f"{raw.hex() or '-'} {pybase64.b64encode_as_string(raw) or '-'}")
    (OUT / "base64_vectors.txt").write_text("\n".join(lines) + "\n")

    candidates = [
        "", "AA==", "AB==", "AAA=", "AAB=", "A===", "====", "AA=A", "AA", "AAA", "AAAA",
        "AA==AAAA", "AAAA====", "AA\nAA", " AAAA", "AAAA ", "AA==\n", "A", "AB=", "AAAAA===",
        "QUJD", "QUJ=", "-_-_", "AAA=AAAA", "AAAA=", "AAAA==", "AAAA===", "QUJDRA==",
        "QUJDREU=", "QUJDREVG", "QU\\JD", "QUJD\x00", "QUJ\u00e9", "////", "++++", "+/+/",
        "ZZZ=", "zzz=", "0123", "abc=" * 20, "QUJD" * 17 + "QQ==", "QUJD" * 17 + "Q%==",
        "QUJD" * 9 + "=QUJ" + "QUJD" * 8,
    ]  # fmt: skip
    lines = []
    for text in candidates:
        try:
            result = "OK " + (pybase64.b64decode(text, validate=True).hex() or "-")
        except Exception:  # noqa: BLE001 - any refusal counts
            result = "ERR"
        lines.append(f"{json.dumps(text)} {result}")
    (OUT / "base64_strict.txt").write_text("\n".join(lines) + "\n")


def write_lz4() -> None:
    rng = np.random.default_rng(4)
    inputs = {
        "empty": b"",
        "text": b"tesscpp speaks the Tesseract protocol. " * 300,
        "random_f32": rng.random(20_000).astype(np.float32).tobytes(),
        "quantized_f64": np.round(rng.random(10_000), 2).tobytes(),
        "zeros": bytes(70_000),
    }
    d = OUT / "lz4"
    d.mkdir(exist_ok=True)
    for name, raw in inputs.items():
        (d / f"{name}.raw").write_bytes(raw)
        (d / f"{name}.lz4").write_bytes(lz4.frame.compress(raw))


def golden_arrays() -> dict[str, np.ndarray]:
    """Arrays of every dtype with edge values (NaN, infinities, -0.0, extremes)."""
    rng = np.random.default_rng(7)
    arrays: dict[str, np.ndarray] = {}
    for name in DTYPES:
        dt = np.dtype(name)
        if dt.kind == "b":
            values = np.array([True, False, True, True])
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            values = np.array([info.min, info.max, 0, 1, info.max // 3], dtype=dt)
            values = np.concatenate([values, rng.integers(info.min, info.max, 4, dtype=dt, endpoint=True)])
        elif dt.kind == "f":
            finfo = np.finfo(dt)
            values = np.array(
                [0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, finfo.tiny, finfo.max, 0.1,
                 1e-7 if name != "float16" else 1e-3, 123.456, -2.5e-5, 1e4],
                dtype=dt,
            )  # fmt: skip
            values = np.concatenate([values, rng.standard_normal(5).astype(dt) * 1000])
        else:
            parts = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, 0.1, 1e20, -3.0])
            values = (parts[:, None] + 1j * parts[None, ::-1]).ravel().astype(dt)
        arrays[f"{name}_1d"] = values
        arrays[f"{name}_scalar"] = np.array(values[1], dtype=dt)
        arrays[f"{name}_empty"] = np.zeros((0,), dtype=dt)
        if values.size >= 6:
            arrays[f"{name}_2d"] = values[:6].reshape(2, 3)
    arrays["float64_3d_empty"] = np.zeros((2, 0, 3))
    arrays["float32_large"] = rng.standard_normal((64, 65)).astype(np.float32)
    return arrays


FORMATS = {
    "json": ("json", None),
    "base64": ("json+base64", None),
    "base64_lz4": ("json+base64", "lz4"),
    "binref": ("json+binref", None),
    "binref_lz4": ("json+binref", "lz4"),
}


def write_docs(arrays: dict[str, np.ndarray]) -> None:
    fields = dict.fromkeys(arrays, (Array[..., None], ...))
    Model = create_model(  # noqa: N806 - a class
        "GoldenArrays", __config__=ConfigDict(arbitrary_types_allowed=True), **fields
    )
    docs = OUT / "docs"
    shutil.rmtree(docs, ignore_errors=True)
    (docs / "binref").mkdir(parents=True)
    for name, (fmt, compression) in FORMATS.items():
        body = output_to_bytes(Model(**arrays), fmt, base_dir=docs / "binref", compression=compression)
        (docs / f"{name}.json").write_bytes(body)
        # What the reference server decodes from this body (binref relative to docs/binref).
        decoded = Model.model_validate_json(body, context={"base_dir": str(docs / "binref")})
        expected = {}
        raw = json.loads(body)
        for field in arrays:
            value = np.asarray(getattr(decoded, field))
            via_sdk = np.array(_decode_array(raw[field], output_path=docs / "binref"), order="C")
            assert value.dtype == via_sdk.dtype and value.shape == via_sdk.shape, (field, value, via_sdk)
            if value.tobytes() != via_sdk.tobytes():
                # The server's json path goes through np.asarray, which turns a list
                # mixing int64 and larger uint64 values into float64 and loses the
                # largest ones; the SDK (np.array(buffer, dtype)) stays exact, and so
                # does tesscpp. The exact values are the golden ones.
                print(f"note: {name}/{field}: server and SDK decoders disagree; keeping the SDK's")
                value = via_sdk
            expected[field] = {
                "dtype": value.dtype.name,
                "shape": list(value.shape),
                "hex": np.array(value, order="C").tobytes().hex(),
            }
        (docs / f"{name}.expected").write_text(json.dumps(expected, indent=0) + "\n")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    write_casts()
    write_base64()
    write_lz4()
    # The edge values overflow and produce NaN on purpose.
    with np.errstate(all="ignore"):
        write_docs(golden_arrays())
    print(f"golden vectors written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
