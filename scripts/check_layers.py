#!/usr/bin/env python3
"""The layer order of src/ and the header places, checked (`make check-layers`,
part of `make test`). docs/architecture.md §1 and §2b say what they mean.

- Layers, bottom to top. Layers of one rank are siblings and must not use each
  other: cuda and codec meet only in gpu_transport, so the codec links no CUDA.
  No library links, and no source file includes, a layer above its own.
- A header's layer is read from where it is: `src/<layer>/x.h` and
  `include/tesscpp/internal/<layer>/x.h` (this tree's own API for tools/, the
  bindings and tests) are `<layer>`'s. An internal header's sources, the .cc
  files that include it first (a .cc includes its own header first), must be
  in that layer's `src/<layer>/`, and it includes nothing above its layer.
  An installed header (`include/tesscpp/`) belongs to the layer whose sources
  implement it; one no .cc implements sits as high as the highest header it
  includes.
- Installed headers are what component authors and client users need and
  what those include: every one is reached from ROOTS.
- tools/ and python/bindings/ use installed or internal headers and their own,
  never a `src/<layer>/` header.
- libtesscpp.so (src/libtesscpp/) holds every library layer below it.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE_DIR = ROOT / "include"

RANK = {
    "core": 0,
    "platform": 1,
    "cuda": 2,
    "codec": 2,
    "schema": 3,
    "component": 4,
    "derivation": 5,
    "gpu_transport": 5,
    "runtime": 6,
    "cpp_kind": 7,
    "loader": 7,
    "client": 8,
    "libtesscpp": 9,  # the shared library: every layer above, no code of its own
    "http": 10,
}
# What component authors and client users include; the umbrella tesscpp.h
# includes them all.
ROOTS = ("component.h", "autodiff.h", "autodiff_arrays.h", "finite_differences.h", "client.h", "gradient_check.h", "cuda.h")
# Targets outside the tesscpp_<layer> naming: the shared library.
TARGET_LAYER = {"tesscpp": "libtesscpp"}
# Code above the library, held to installed and internal headers.
CONSUMERS = ("tools", "python/bindings")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\(\s*(tesscpp_\w+|tesscpp)\b(.*?)\)", re.S)
LINKED = re.compile(r"\btesscpp(?:_(\w+))?\b")


def includes(path: Path) -> list[str]:
    return INCLUDE.findall(path.read_text())


def library_sources() -> list[tuple[str, Path]]:
    found = []
    for layer in RANK:
        for source in sorted((ROOT / "src" / layer).glob("*.[ch]*")):
            if source.suffix in (".h", ".cc") and not source.stem.endswith("_test"):
                found.append((layer, source))
    return found


@cache
def implementers() -> dict[str, set[str]]:
    """tesscpp/... header -> the layers whose .cc files include it first."""
    found: dict[str, set[str]] = {}
    for layer, source in library_sources():
        first = includes(source)[:1] if source.suffix == ".cc" else []
        if first and first[0].startswith("tesscpp/"):
            found.setdefault(first[0], set()).add(layer)
    return found


@cache
def layer_of_header(path: str) -> str:
    """The layer of an include path, or a message saying why it has none."""
    head, _, _ = path.partition("/")
    if head in RANK:
        return head
    if head != "tesscpp":
        return ""  # a header of the same folder or a third-party one
    if not (INCLUDE_DIR / path).is_file():
        return f"{path}: no such header"
    internal = path.removeprefix("tesscpp/internal/")
    if internal != path:
        folder = internal.partition("/")[0]
        return folder if folder in RANK and "/" in internal else f"{path}: not in a layer's folder of internal/"
    layers = implementers().get(path, set())
    if len(layers) > 1:
        return f"{path}: implemented in several layers ({', '.join(sorted(layers))})"
    if layers:
        return layers.pop()
    used = [layer_of_header(p) for p in includes(INCLUDE_DIR / path)]
    used = [u for u in used if u in RANK]
    return max(used, key=RANK.__getitem__, default="core")


def allowed(user: str, used: str) -> bool:
    return used == user or (used in RANK and RANK[used] < RANK[user])


def check_library(problems: list[str]) -> int:
    for layer, source in library_sources():
        for path in includes(source):
            used = layer_of_header(path)
            if used and used not in RANK:
                problems.append(f"{source.relative_to(ROOT)}: {used}")
            elif used and not allowed(layer, used):
                problems.append(f"{source.relative_to(ROOT)}: includes {path} ({used}, not below {layer})")
    for layer in RANK:
        cmake = (ROOT / "src" / layer / "CMakeLists.txt").read_text()
        for target, libraries in LINK.findall(cmake):
            if TARGET_LAYER.get(target, target.removeprefix("tesscpp_")) != layer:
                continue
            for match in LINKED.finditer(libraries):
                library = match.group(1) or "libtesscpp"
                if not allowed(layer, library):
                    problems.append(f"src/{layer}/CMakeLists.txt: tesscpp_{layer} links {match.group(0)}")
    return len(library_sources())


def check_internal_headers(problems: list[str]) -> None:
    """Each internal header sits in its layer's folder: implemented there, and
    including nothing above it."""
    internal_dir = INCLUDE_DIR / "tesscpp" / "internal"
    for header in sorted(internal_dir.rglob("*.h")):
        path = str(header.relative_to(INCLUDE_DIR))
        layer = layer_of_header(path)
        if layer not in RANK:
            problems.append(f"include/{layer}")
            continue
        for implementer in sorted(implementers().get(path, set()) - {layer}):
            problems.append(f"include/{path}: in internal/{layer}/, but implemented in src/{implementer}/")
        for included in includes(header):
            used = layer_of_header(included)
            if used in RANK and not allowed(layer, used):
                problems.append(f"include/{path}: includes {included} ({used}, not below {layer})")


def check_shared_library(problems: list[str]) -> None:
    cmake = (ROOT / "src/libtesscpp/CMakeLists.txt").read_text()
    listed = re.search(r"set\(tess_library_layers([^)]*)\)", cmake)
    held = set(listed.group(1).split()) if listed else set()
    below = {layer for layer, rank in RANK.items() if rank < RANK["libtesscpp"]}
    for layer in sorted(below - held):
        problems.append(f"src/libtesscpp/CMakeLists.txt: libtesscpp.so does not hold tesscpp_{layer}")
    for layer in sorted(held - below):
        problems.append(f"src/libtesscpp/CMakeLists.txt: libtesscpp.so holds {layer}, not a layer below it")


def check_installed(problems: list[str]) -> None:
    top = INCLUDE_DIR / "tesscpp"
    installed = {str(p.relative_to(top)) for p in top.rglob("*.h") if "internal" not in p.relative_to(top).parts}
    reached: set[str] = set()
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in reached or name not in installed:
            continue
        reached.add(name)
        for path in includes(INCLUDE_DIR / "tesscpp" / name):
            if path.startswith("tesscpp/internal/"):
                problems.append(f"include/tesscpp/{name}: an installed header includes {path}")
            elif path.startswith("tesscpp/"):
                todo.append(path.removeprefix("tesscpp/"))
    for name in sorted(installed - reached - {"tesscpp.h"}):
        problems.append(f"include/tesscpp/{name}: installed, but no component or client header needs it "
                        "(move it to include/tesscpp/internal/ or beside its sources)")


def check_consumers(problems: list[str]) -> None:
    for folder in CONSUMERS:
        for source in sorted((ROOT / folder).glob("*.[ch]*")):
            for path in includes(source):
                head = path.partition("/")[0]
                if head in RANK:
                    problems.append(f"{source.relative_to(ROOT)}: includes {path} "
                                    "(tools and bindings use include/tesscpp/ and its internal/)")
                elif head == "tesscpp" and not (INCLUDE_DIR / path).is_file():
                    problems.append(f"{source.relative_to(ROOT)}: {path}: no such header")


def main() -> int:
    problems: list[str] = []
    for name in ROOTS:
        if not (INCLUDE_DIR / "tesscpp" / name).is_file():
            problems.append(f"scripts/check_layers.py: root header tesscpp/{name} does not exist")
    files = check_library(problems)
    check_internal_headers(problems)
    check_shared_library(problems)
    check_installed(problems)
    check_consumers(problems)
    for problem in problems:
        print(f"check-layers: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-layers: {len(RANK)} layers, {files} files, no upward dependency; headers in place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
