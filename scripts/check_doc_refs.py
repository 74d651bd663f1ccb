#!/usr/bin/env python3
"""Every reference to a document of docs/ points at something there (`make check`).

Code comments, docs, tests and scripts cite documents as `docs/<name>.md`,
often with a section: `docs/architecture.md §2a`, `docs/gpu-transport-protocol.md 3`
(a number right after the name is a section too). A document that was renamed
or split, or a section that was renumbered, leaves such references dangling,
and nothing else notices: this check fails for

- a `docs/<name>.md` that does not exist;
- a section that no heading of that document carries (`## 2a. ...`,
  `### 12.4.1 ...`: the heading's first word, without its trailing dot).

Relative links inside docs/ (`[x](other.md)`) are checked the same way.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

from first_party import ROOT, first_party_files

# Recorded results quote what the tree said when they ran; they are not references.
SKIPPED_DIRS = frozenset({"results"})

REFERENCE = re.compile(r"docs/([A-Za-z0-9_-]+\.md)(?:,?\s*§\s*([0-9]+(?:[0-9a-z.]*[0-9a-z])?)|\s+([0-9]+(?:\.[0-9]+)*[a-z]?)\b)?")
LINK = re.compile(r"\]\(([A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)")
HEADING = re.compile(r"^#{1,6}\s+([0-9]+[0-9a-z.]*)", re.M)


@cache
def sections(document: Path) -> frozenset[str]:
    text = document.read_text()
    # Headings inside fenced code blocks are code (a C++ #include), not sections.
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return frozenset(m.group(1).rstrip(".") for m in HEADING.finditer(text))


def problems_in(path: Path) -> list[str]:
    found = []
    text = path.read_text(errors="replace")
    where = path.relative_to(ROOT)
    for m in REFERENCE.finditer(text):
        name, section = m.group(1), m.group(2) or m.group(3)
        line = text.count("\n", 0, m.start()) + 1
        document = ROOT / "docs" / name
        if not document.exists():
            found.append(f"{where}:{line}: docs/{name} does not exist")
        elif section and section.rstrip(".") not in sections(document):
            found.append(f"{where}:{line}: docs/{name} has no section {section}")
    if path.parent == ROOT / "docs":
        for m in LINK.finditer(text):
            if not (ROOT / "docs" / m.group(1)).exists():
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{where}:{line}: link to {m.group(1)}, which docs/ does not have")
    return found


def main() -> int:
    problems = [p for path in first_party_files(SKIPPED_DIRS) for p in problems_in(path)]
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-doc-refs: {len(problems)} dangling references to docs/")
        return 1
    print("check-doc-refs: every reference to docs/ and its sections resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
