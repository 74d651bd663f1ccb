#!/usr/bin/env python3
"""Merges codec_benchmark's JSON and python_codecs.py's JSON into one table.

    report.py <gbench.json> <python.json>  ->  markdown on stdout

Each row: our throughput, the peer's on the same work in the same run, the
ratio (ours / peer) and the target (the physical limit measured on this machine) where one exists.
"""

from __future__ import annotations

import json
import sys

MIB = 1 << 20
CACHE, DRAM, LZ4 = MIB, 256 * MIB, 64 * MIB

# (label, gbench name, python key or None, target GB/s or None)
ROWS = [
    ("memcpy 1 MiB (in cache)", f"BM_Memcpy/{CACHE}", "numpy_copy/1MiB", None),
    ("memcpy 256 MiB", f"BM_Memcpy/{DRAM}", "numpy_copy/256MiB", None),
    ("base64 encode AVX2, 1 MiB", f"BM_Base64Encode/{CACHE}/1", "pybase64_encode/1MiB", 10.0),
    ("base64 encode AVX2, 256 MiB", f"BM_Base64Encode/{DRAM}/1", "pybase64_encode/256MiB", 4.0),
    ("base64 decode AVX2, 1 MiB", f"BM_Base64Decode/{CACHE}/1", "pybase64_decode_validate/1MiB", 10.0),
    ("base64 decode AVX2, 256 MiB", f"BM_Base64Decode/{DRAM}/1", "pybase64_decode_validate/256MiB", 4.5),
    ("base64 decode AVX2 vs np.frombuffer(b64decode), 256 MiB", f"BM_Base64Decode/{DRAM}/1",
     "numpy_frombuffer_b64decode/256MiB", 4.5),
    ("base64 encode scalar, 256 MiB", f"BM_Base64Encode/{DRAM}/0", "pybase64_encode/256MiB", None),
    ("base64 decode scalar, 256 MiB", f"BM_Base64Decode/{DRAM}/0", "pybase64_decode_validate/256MiB", 2.5),
    ("lz4 compress, random float32 64 MiB", f"BM_Lz4Compress/{LZ4}/0", "lz4_compress/random", 1.8),
    ("lz4 compress, quantized float32 64 MiB", f"BM_Lz4Compress/{LZ4}/1", "lz4_compress/quantized", 1.8),
    ("lz4 decompress, random float32 64 MiB", f"BM_Lz4Decompress/{LZ4}/0", "lz4_decompress/random", 5.0),
    ("lz4 decompress, quantized float32 64 MiB", f"BM_Lz4Decompress/{LZ4}/1", "lz4_decompress/quantized", 5.0),
    ("JSON scan of a 341 MiB base64 body", f"BM_JsonScanBase64Body/{DRAM}", None, 5.0),
    ("array decode, base64, 256 MiB float32", f"BM_ArrayDecode/{DRAM}/1/real_time",
     "tesseract_core_body_decode_base64", None),
    ("array encode, base64, 256 MiB float32", f"BM_ArrayEncode/{DRAM}/1/real_time",
     "tesseract_core_body_encode_base64", None),
    ("array decode, base64+lz4, 256 MiB float32", f"BM_ArrayDecode/{DRAM}/2/real_time",
     "tesseract_core_body_decode_base64_lz4", None),
    ("array encode, base64+lz4, 256 MiB float32", f"BM_ArrayEncode/{DRAM}/2/real_time",
     "tesseract_core_body_encode_base64_lz4", None),
    ("array decode, binref on /dev/shm, 256 MiB", f"BM_ArrayDecode/{DRAM}/3/real_time",
     "tesseract_core_body_decode_binref_shm", 8.0),
    ("array encode, binref on /dev/shm, 256 MiB", f"BM_ArrayEncode/{DRAM}/3/real_time",
     "tesseract_core_body_encode_binref_shm", None),
    ("array decode, binref on disk, 256 MiB", f"BM_ArrayDecode/{DRAM}/4/real_time",
     "tesseract_core_body_decode_binref_disk", 8.0),
    ("array encode, binref on disk, 256 MiB", f"BM_ArrayEncode/{DRAM}/4/real_time",
     "tesseract_core_body_encode_binref_disk", 0.9),
    ("array decode, json, 4 MiB float32", f"BM_ArrayDecode/{4 * MIB}/0/real_time",
     "tesseract_core_body_decode_json", None),
    ("array encode, json, 4 MiB float32", f"BM_ArrayEncode/{4 * MIB}/0/real_time",
     "tesseract_core_body_encode_json", None),
]


def main() -> int:
    gbench = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
    python = json.load(open(sys.argv[2]))
    print("| operation | tesscpp GB/s | fresh blocks/iter | Python peer | peer GB/s | ratio | target GB/s |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for label, name, peer, target in ROWS:
        ours = gbench.get(name)
        if ours is None:
            print(f"| {label} | missing ({name}) | | | | | |")
            continue
        gbps = ours["bytes_per_second"] / 1e9
        fresh = ours.get("fresh_blocks_per_iter")
        fresh_text = f"{fresh:.2f}" if fresh is not None else ""
        peer_gbps = python[peer]["gbps"] if peer in python else None
        ratio = f"{gbps / peer_gbps:.1f}x" if peer_gbps else ""
        peer_text = f"{peer_gbps:.2f}" if peer_gbps else ""
        target_text = "" if target is None else f"{target:g} {'ok' if gbps >= target else 'MISSED'}"
        print(f"| {label} | {gbps:.2f} | {fresh_text} | {peer or ''} | {peer_text} | {ratio} | {target_text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
