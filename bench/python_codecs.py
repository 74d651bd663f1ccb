#!/usr/bin/env python3
"""The Python stack on the work codec_benchmark does, for ratios in one run.

Times pybase64, numpy.frombuffer(base64.b64decode(...)), python-lz4 and
tesseract-core 1.15.0's own array encoders/decoders on the same sizes and data
kinds as bench/codec_benchmark.cc, plus a numpy copy as the memcpy baseline.
Prints one JSON object: {name: {"seconds": median, "bytes": n, "gbps": n / median / 1e9}}.
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import lz4.frame
import numpy as np
import pybase64
from pydantic import ConfigDict, create_model
from tesseract_core.runtime.array_encoding import _dump_base64_arraydict, _load_base64_arraydict
from tesseract_core.runtime.file_interactions import output_to_bytes
from tesseract_core.runtime.schema_types import Array

MIB = 1 << 20
DRAM = 256 * MIB
CACHE = 1 * MIB


def best_of(fn, repeat: int = 5, min_seconds: float = 0.3) -> float:
    """Median time of at least `repeat` runs (and at least `min_seconds` of them).

    The median, not the minimum: Google Benchmark reports means of many
    iterations, and on this noisy machine the minimum flatters whoever is timed
    fewer times (file writes especially, which depend on writeback)."""
    times: list[float] = []
    while len(times) < repeat or (sum(times) < min_seconds and len(times) < 50):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def float32(nbytes: int, quantized: bool = False) -> np.ndarray:
    """Random normal float32, or U(0,1) rounded to 2 decimals (as codec_benchmark.cc)."""
    rng = np.random.default_rng(3)
    if quantized:
        return np.round(rng.random(nbytes // 4), 2).astype(np.float32)
    return rng.standard_normal(nbytes // 4).astype(np.float32)


def main() -> int:
    results: dict[str, dict[str, float]] = {}

    def record(name: str, seconds: float, nbytes: int) -> None:
        results[name] = {"seconds": seconds, "bytes": nbytes, "gbps": nbytes / seconds / 1e9}

    for size, tag in ((CACHE, "1MiB"), (DRAM, "256MiB")):
        raw = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes()
        dst = np.empty(size, dtype=np.uint8)
        src = np.frombuffer(raw, dtype=np.uint8)
        record(f"numpy_copy/{tag}", best_of(lambda dst=dst, src=src: np.copyto(dst, src)), size)
        text = pybase64.b64encode(raw)
        record(f"pybase64_encode/{tag}", best_of(lambda raw=raw: pybase64.b64encode(raw)), size)
        record(
            f"pybase64_decode_validate/{tag}", best_of(lambda text=text: pybase64.b64decode(text, validate=True)), size
        )
        record(
            f"numpy_frombuffer_b64decode/{tag}",
            best_of(lambda text=text: np.frombuffer(base64.b64decode(text), dtype=np.float32)),
            size,
        )

    for quantized, label in ((False, "random"), (True, "quantized")):
        data = float32(64 * MIB, quantized).tobytes()
        frame = lz4.frame.compress(data)
        record(f"lz4_compress/{label}", best_of(lambda data=data: lz4.frame.compress(data)), len(data))
        record(f"lz4_decompress/{label}", best_of(lambda frame=frame: lz4.frame.decompress(frame)), len(data))

    # tesseract-core's array encoders/decoders on one 256 MiB float32 array ...
    arr = float32(DRAM)
    encoded = _dump_base64_arraydict(arr)
    record("tesseract_core_dump_base64", best_of(lambda: _dump_base64_arraydict(arr)), arr.nbytes)
    record("tesseract_core_load_base64", best_of(lambda: _load_base64_arraydict(encoded)), arr.nbytes)

    # ... and whole bodies, as its server writes a response and validates a request.
    Model = create_model(  # noqa: N806 - a class
        "Out", __config__=ConfigDict(arbitrary_types_allowed=True), result=(Array[..., None], ...)
    )
    model = Model(result=arr)
    body = output_to_bytes(model, "json+base64")
    record("tesseract_core_body_encode_base64", best_of(lambda: output_to_bytes(model, "json+base64")), arr.nbytes)
    record("tesseract_core_body_decode_base64", best_of(lambda: Model.model_validate_json(body)), arr.nbytes)
    body_lz4 = output_to_bytes(model, "json+base64", compression="lz4")
    record(
        "tesseract_core_body_encode_base64_lz4",
        best_of(lambda: output_to_bytes(model, "json+base64", compression="lz4"), repeat=3),
        arr.nbytes,
    )
    record(
        "tesseract_core_body_decode_base64_lz4",
        best_of(lambda: Model.model_validate_json(body_lz4), repeat=3),
        arr.nbytes,
    )
    for base, label in (("/dev/shm", "shm"), ("/var/tmp", "disk")):
        with tempfile.TemporaryDirectory(dir=base) as scratch:
            def encode_binref(scratch=scratch):
                for old in Path(scratch).glob("*.bin"):
                    old.unlink()
                return output_to_bytes(model, "json+binref", base_dir=scratch)

            record(f"tesseract_core_body_encode_binref_{label}", best_of(encode_binref, repeat=3), arr.nbytes)
            binref_body = encode_binref()

            def decode_binref(binref_body=binref_body, scratch=scratch):
                return Model.model_validate_json(binref_body, context={"base_dir": scratch})

            record(f"tesseract_core_body_decode_binref_{label}", best_of(decode_binref, repeat=3), arr.nbytes)
    small = Model(result=float32(4 * MIB))
    small_body = output_to_bytes(small, "json")
    record("tesseract_core_body_encode_json", best_of(lambda: output_to_bytes(small, "json"), repeat=3), 4 * MIB)
    record(
        "tesseract_core_body_decode_json",
        best_of(lambda: Model.model_validate_json(small_body), repeat=3),
        4 * MIB,
    )
    json.dump(results, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
