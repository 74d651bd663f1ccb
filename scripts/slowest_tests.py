#!/usr/bin/env python3
"""The slowest tests of the last ctest runs in the given build trees, from
CTest's own log (Testing/Temporary/LastTest.log): printed at the end of
`make test`, so that a CI log says where its time went.

    scripts/slowest_tests.py build/ci build/fuzz [--top 10]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

TEST = re.compile(r"^\d+/\d+ Test: (?P<name>.+)$")
TIME = re.compile(r"^Test time =\s+(?P<seconds>[\d.]+) sec$")


def timings(build: Path) -> list[tuple[float, str]]:
    log = build / "Testing" / "Temporary" / "LastTest.log"
    if not log.exists():
        return []
    found, name = [], None
    for line in log.read_text(errors="replace").splitlines():
        if m := TEST.match(line):
            name = m["name"]
        elif (m := TIME.match(line)) and name is not None:
            found.append((float(m["seconds"]), f"{name} ({build.name})"))
            name = None
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("builds", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    every = sorted((t for b in args.builds for t in timings(b)), reverse=True)
    if not every:
        print("slowest tests: no ctest log found in", ", ".join(map(str, args.builds)))
        return 0
    total = sum(seconds for seconds, _ in every)
    print(f"slowest tests (of {len(every)}, {total:.0f} s of test time in all):")
    for seconds, name in every[: args.top]:
        print(f"  {seconds:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
