"""The files of the tree that we write, for the checks that read across it
(check_doc_refs.py, check_citations.py): sources, tests, scripts and
documents, never what is vendored, built or cached."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("src", "include", "tools", "python", "tests", "scripts", "docs", "examples", "bench", "deploy", "cmake")
SUFFIXES = {".cc", ".h", ".cu", ".cuh", ".py", ".md", ".sh", ".txt", ".cmake", ".yaml", ".yml", ".cfg", ".toml",
            ".log", ".json"}  # fmt: skip


def first_party_files(skip_dirs: frozenset[str] = frozenset()) -> list[Path]:
    """README.md and every file of TREES with one of SUFFIXES, outside `skip_dirs` (folder names)."""
    skipped = skip_dirs | {"__pycache__"}
    files = [ROOT / "README.md"]
    for top in TREES:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not skipped & set(path.relative_to(ROOT).parts):
                files.append(path)
    return files
