#!/usr/bin/env python3
"""The namespace rule of docs/architecture.md §1, checked (`make check`).

- include/tesscpp/: `tesscpp`, the CUDA API `tesscpp::cuda`, the autodiff API
  `tesscpp::autodiff` (its templates' helpers in `tesscpp::autodiff::internal`),
  and `tesscpp::internal` for what a public header must expose to its macros.
  include/tesscpp/internal/ (the tree's own API) also `tesscpp::<layer>` for
  the layer that implements a header.
- src/<layer>/: code that is not public API in `tesscpp::<layer>` (the cuda
  layer in `tesscpp::cuda::internal`, as `tesscpp::cuda` is public). A bare
  `namespace tesscpp` block in a src/ header may only forward-declare types
  or define a type the public API forward-declares.
- tools/: `tesscpp::cli`; python/bindings/: `tesscpp::bindings`;
  `tesscpp::testing` for helpers of the unit tests.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OPEN = re.compile(r"^namespace (tesscpp(?:::[\w:]+)?) \{", re.M)
NESTED = re.compile(r"^namespace (\w+) \{", re.M)
FORWARD = re.compile(r"^\s*(?:class|struct) (\w+);", re.M)


def allowed_namespaces(path: Path) -> set[str] | None:
    rel = path.relative_to(ROOT).parts
    if rel[0] == "include":
        if rel[2] == "internal":  # include/tesscpp/internal/<layer>/: that layer's
            return {"tesscpp", f"tesscpp::{rel[3]}"}
        return {"tesscpp", "tesscpp::cuda", "tesscpp::autodiff", "tesscpp::autodiff::internal", "tesscpp::internal"}
    if rel[0] == "tools":
        return {"tesscpp::cli"}
    if rel[:2] == ("python", "bindings"):
        return {"tesscpp::bindings"}
    if rel[0] == "src":
        layer = rel[1]
        if layer == "cuda":
            return {"tesscpp", "tesscpp::cuda", "tesscpp::cuda::internal"}
        allowed = {"tesscpp", f"tesscpp::{layer}", "tesscpp::testing"}  # testing: helpers of the unit tests
        if layer == "component":
            allowed.add("tesscpp::internal")  # defines what component_abi.h declares for its macros
        if layer == "derivation":  # implements the public tesscpp::autodiff API's library parts
            allowed |= {"tesscpp::autodiff", "tesscpp::autodiff::internal"}
        return allowed
    return None


def blocks(text: str, start: int) -> str:
    """The text of the block whose opening brace ends at `start`."""
    depth, i = 1, start
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def top_level_statements(body: str) -> list[str]:
    out, depth, current = [], 0, ""
    for ch in body:
        current += ch
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and not current.rstrip().endswith(";"):
                continue
        elif ch == ";" and depth == 0:
            out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return [s for s in out if s and not s.startswith("//")]


def strip_comments(text: str) -> str:
    """The code without comments and literals, whose braces would miscount."""
    text = re.sub(r'R"(\w*)\((.*?)\)\1"', '""', text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])'", "''", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main() -> int:
    public_types = set()
    for header in (ROOT / "include/tesscpp").rglob("*.h"):
        public_types |= set(FORWARD.findall(header.read_text()))
    problems: list[str] = []
    files = 0
    sources = [*ROOT.glob("src/*/*.[ch]*"), *ROOT.glob("include/tesscpp/**/*.h"), *ROOT.glob("tools/*.[ch]*"),
               *ROOT.glob("python/bindings/*.[ch]*")]
    for path in sorted(sources):
        allowed = allowed_namespaces(path)
        if allowed is None or path.suffix not in (".h", ".cc"):
            continue
        files += 1
        text = strip_comments(path.read_text())
        where = path.relative_to(ROOT)
        for match in OPEN.finditer(text):
            name = match.group(1)
            body = blocks(text, match.end())
            names = [name] + [f"{name}::{n}" for n in NESTED.findall(body)]
            for full in names:
                if full not in allowed:
                    problems.append(f"{where}: namespace {full} (allowed here: {', '.join(sorted(allowed))})")
            if name == "tesscpp" and path.suffix == ".h" and where.parts[0] == "src":
                for statement in top_level_statements(re.sub(r"namespace \w+ \{.*", "", body, flags=re.S)):
                    head = re.match(r"(?:class|struct) (\w+)", statement)
                    if head and (statement.endswith(";") and "{" not in statement or head.group(1) in public_types):
                        continue
                    problems.append(f"{where}: declares `{statement.splitlines()[0][:60]}` in bare tesscpp; "
                                    f"internal code belongs in tesscpp::{where.parts[1]}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-namespaces: {len(problems)} problems (rule: docs/architecture.md §1)")
        return 1
    print(f"check-namespaces: {files} files follow the namespace rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
