#!/usr/bin/env python3
"""Every file of evidence that README.md and docs/ cite exists, says where it
came from, and no failed GPU run is cited as a passing one (part of `make check`).

A number in the documents cites the file under bench/results/ that holds it.
This check fails when a cited file is missing; when its first lines do not
name a commit (7 or more hex digits), the machine (cores, or the GPU) and the
command (a script or program of the tree) — files written before the rule are
listed in LEGACY, never to grow; and when a cited GPU test log records a
failure (a pytest summary with failed tests, or `build_and_test.sh exit
status:` other than 0) while the paragraph that cites it does not say "failed".

It also holds bench/results/ to what bench/README.md says it keeps: the latest
run of each benchmark (the files of its newest date) and the runs something
cites by name — a document, a code comment, a script, or a kept result file.
Any other file is stale: git's history keeps it, the tree does not.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from collections.abc import Callable
from pathlib import Path

from first_party import ROOT, first_party_files
CITED = re.compile(r"bench/results/[\w.\-]+")
SUMMARY = re.compile(r"=+ (?P<counts>[^=]*\b(?:passed|failed)\b[^=]*) in [\d.]+s")
EXIT = re.compile(r"build_and_test\.sh exit status: (\d+)")
HEADER = {
    "commit": re.compile(r"\b[0-9a-f]{7,40}\b"),
    "machine": re.compile(r"\bcores?\b|H100|H200|NVIDIA|x86_64", re.IGNORECASE),
    "command": re.compile(r"\.py\b|\.sh\b|\bbench/|\bscripts/|\btesscpp\b|ctest|pytest"),
}
HEADER_LINES = 12
# Cited before the header rule (2026-12-07) and short of a commit, machine or
# command in their first lines; what they hold is described where they are cited.
LEGACY = {
    "ad-libraries-20261202.txt", "autodiff-20261202.md", "autodiff-20261202-tape-reuse.md",
    "autodiff-20261205-array-scatter.md", "gpu-bench-20261202-rerun.md", "gpu-bench-20261203.md",
    "gpu-bench-20261203-transport-interfaces.md", "gpu-floor-20261202.md", "gpu-floor-20261202-expandable.md",
    "gpu-jax-autodiff-20261205-h200.log", "gpu-tests-20261201.log", "gpu-tests-20261203.log",
    "h2d-bench-20261202.md", "h2d-bench-20261202-lean-walk.md", "h2d-bench-20261202-lean-walk-2.md",
    "h2d-bench-20261203.md", "h2d-probe-20261202-batched.txt", "h2d-probe-20261202-scatter.txt",
    "h2d-probe-20261202-staging.txt", "h2d-python-costs-20261202.txt", "h2d-small-batch-20261202.txt",
    "jax-bridge-20261204.md", "jax-bridge-gpu-20261205-h100.md", "python-host-20261204.md",
    "python-host-20261204-ad15d87.md", "vmm-bench-20261202.md", "vmm-bench-20261202-rerun.md",
    "vmm-probe-20261202.txt",
}  # fmt: skip


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]


def paragraphs(text: str) -> list[str]:
    """The text in paragraphs and list items (a citation's context)."""
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*[-|])", text) if p.strip()]


def failures(log: Path) -> str | None:
    """What failed in a GPU test log, or None when nothing did."""
    text = log.read_text(errors="replace")
    found = [m.group("counts") for m in SUMMARY.finditer(text) if re.search(r"\b[1-9]\d* failed", m.group("counts"))]
    found += [f"exit status {m.group(1)}" for m in EXIT.finditer(text) if m.group(1) != "0"]
    return "; ".join(found) or None


def missing_header(path: Path) -> list[str]:
    head = "\n".join(path.read_text(errors="replace").splitlines()[:HEADER_LINES])
    return [what for what, pattern in HEADER.items() if not pattern.search(head)]


RESULTS = ROOT / "bench" / "results"
DATED = re.compile(r"^(?P<benchmark>.*?)-(?P<date>\d{8})")
# A glob over result names in a citation ("autodiff-gpu-20261205-h100*.md", "h2d-probe-*"): a
# name-like token with a '*' after a dash or a date. Tokens are matched whole, then filtered,
# which keeps the scan of the tree linear.
TOKEN = re.compile(r"[\w.\-*]+")
GLOB = re.compile(r"-\*|\d{8}.*\*")


def plain_run(name: str) -> tuple[str, str] | None:
    """(benchmark, date) of a benchmark's plain run: the name is the benchmark,
    the date and at most a time, commits and the card after it
    ("gpu-tests-20261207-h100.log"). A descriptive suffix names an experiment
    ("runtime-20261203-served-component-ab.md"), kept only when cited."""
    m = DATED.match(name)
    if not m:
        return None
    rest = name[m.end() :].split(".")[0].strip("-")
    plain = all(re.fullmatch(r"\d{6}|[0-9a-f]{7,40}|h100|h200", part) for part in rest.split("-") if part)
    return (m["benchmark"], m["date"]) if plain else None


def latest_runs(names: list[str]) -> set[str]:
    """The plain runs of each benchmark's newest date."""
    newest: dict[str, str] = {}
    for name in names:
        if run := plain_run(name):
            newest[run[0]] = max(newest.get(run[0], ""), run[1])
    return {n for n in names if (run := plain_run(n)) and run[1] == newest[run[0]]}


def citer(body: str) -> Callable[[str], bool]:
    """Whether `body` names a file: whole, by its stem, or by a glob (found once)."""
    globs = {token for token in set(TOKEN.findall(body)) if "*" in token and GLOB.search(token)}

    def cites(name: str) -> bool:
        stem = name.split(".")[0]
        return name in body or stem + "." in body or any(fnmatch.fnmatch(name, glob) for glob in globs)

    return cites


def stale_results() -> list[str]:
    """Result files neither latest nor cited, following citations from kept results."""
    results = {p.name: p.read_text(errors="replace") for p in RESULTS.iterdir() if p.is_file()}
    outside = citer("\n".join(p.read_text(errors="replace") for p in first_party_files(frozenset({"results"}))))
    kept = latest_runs(list(results)) | {n for n in results if outside(n)}
    new = kept
    while new:  # a kept result may cite the runs it builds on
        cited = citer("\n".join(results[n] for n in new))
        new = {n for n in results if n not in kept and cited(n)}
        kept |= new
    return sorted(n for n in results if n not in kept)


def main() -> int:
    problems = [f"bench/results/{n}: neither the latest run of its benchmark nor cited anywhere (git rm it)"
                for n in stale_results()]
    cited = 0
    for document in documents():
        if not document.exists():
            continue
        for paragraph in paragraphs(document.read_text()):
            for name in sorted(set(CITED.findall(paragraph))):
                name = name.rstrip(".")
                cited += 1
                path = ROOT / name
                where = f"{document.relative_to(ROOT)}: {name}"
                if not path.exists():
                    problems.append(f"{where}: cited, but there is no such file")
                elif path.name not in LEGACY and (missing := missing_header(path)):
                    problems.append(f"{where}: its first {HEADER_LINES} lines name no {', no '.join(missing)}")
                elif path.name.startswith("gpu-tests-") and (failed := failures(path)) and "failed" not in paragraph:
                    problems.append(f"{where}: the log records a failure ({failed}), the text does not say so")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-citations: {len(problems)} problem(s) in {cited} citations")
        return 1
    print(f"check-citations: {cited} citations of bench/results/, every file there, no failed run cited as passing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
