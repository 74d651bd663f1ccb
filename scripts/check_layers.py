#!/usr/bin/env python3
"""The layer order of src/, checked: no library links, and no source file
includes, a layer above its own (`make check-layers`, part of `make test`).

Layers, bottom to top (docs/architecture.md). Layers of one rank are siblings
and must not use each other: cuda and codec meet only in gpu_transport, so the
codec links no CUDA.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RANK = {
    "core": 0,
    "platform": 1,
    "cuda": 2,
    "codec": 2,
    "schema": 3,
    "component": 4,
    "gpu_transport": 5,
    "runtime": 6,
    "loader": 7,  # the component-library loader; its directory also makes libtesscpp.so
    "client": 8,
    "http": 9,
}

# The layer that implements each public header (include/tesscpp/<name>.h).
PUBLIC = {
    "buffer": "core", "buffer_pool": "core", "device": "core", "dtype": "core", "ipc_descriptor": "core",
    "path": "core", "result": "core", "shape": "core", "status": "core", "tensor": "core",
    "type_fwd": "core", "validation_issue": "core", "value": "core",
    "cuda": "cuda", "cuda_ipc": "cuda", "cuda_transfer": "cuda",
    "encoding": "codec", "json": "codec",
    "schema": "schema", "validate": "schema",
    "component": "component", "component_abi": "component", "model": "component", "autodiff": "component",
    "autodiff_tape": "component",
    "runtime": "runtime",
    "component_library": "loader",
    "client": "client", "gradient_check": "client",
    "tesscpp": "top",  # the umbrella header: for users, never for the library itself
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\(\s*(tesscpp_\w+)(.*?)\)", re.S)


def layer_of_include(path: str) -> str | None:
    head, _, rest = path.partition("/")
    if head == "tesscpp":
        name = rest.removesuffix(".h")
        if name not in PUBLIC:
            return "unknown public header"
        return PUBLIC[name]
    return head if head in RANK else None


def allowed(user: str, used: str) -> bool:
    if used == user:
        return True
    if used == "top" or used not in RANK:
        return False
    return RANK[used] < RANK[user]


def main() -> int:
    problems: list[str] = []
    missing = sorted(p.stem for p in (ROOT / "include/tesscpp").glob("*.h") if p.stem not in PUBLIC)
    problems += [f"include/tesscpp/{name}.h: no layer assigned in scripts/check_layers.py" for name in missing]
    files = 0
    for layer in RANK:
        directory = ROOT / "src" / layer
        for source in sorted(directory.glob("*.[ch]*")):
            if source.stem.endswith("_test") or source.suffix not in (".h", ".cc"):
                continue  # tests may use what sits above the code they test
            files += 1
            for path in INCLUDE.findall(source.read_text()):
                used = layer_of_include(path)
                if used is not None and not allowed(layer, used):
                    problems.append(f"{source.relative_to(ROOT)}: includes {path} ({used}, not below {layer})")
        cmake = directory / "CMakeLists.txt"
        for target, libraries in LINK.findall(cmake.read_text()):
            if not target.endswith("_tests") and target == f"tesscpp_{layer}":
                for library in re.findall(r"\btesscpp_(\w+)", libraries):
                    if not allowed(layer, library):
                        problems.append(f"{cmake.relative_to(ROOT)}: {target} links tesscpp_{library}")
    for problem in problems:
        print(f"check-layers: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-layers: {len(RANK)} layers, {files} files, no upward dependency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
