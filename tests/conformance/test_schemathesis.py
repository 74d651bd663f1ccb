"""Property-based requests from each server's own OpenAPI document (schemathesis), differential.

schemathesis (pinned in scripts/deps/requirements-dev.txt) reads
/openapi.json and sends what the schema allows and what it does not: boundary
values, wrong types, missing and extra fields, odd strings and bytes. With a
fixed seed and deterministic generation it sends the same requests, in the
same order, to any server with the same document — and tesscpp serves
tesseract-runtime's documents byte for byte — so the runs pair up request by
request.

--server-backend=tesscpp-py: every Python fixture on `tesscpp serve
tesseract_api.py` and on tesseract-runtime. The test fails if ours stops
serving, or if any answer differs from tesseract-runtime's in status or
bytes (a 5xx where it answers otherwise is one such difference), beyond the
accepted differences listed below and in docs/compatibility.md.

--server-backend=tesscpp: every C++ example. The test fails if the server
stops serving, if an example with a Python twin (tests/fixtures/python)
answers any request with another status than the twin on tesseract-runtime,
or if a 500 is not a failure the component itself reported.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import requests

from conftest import EXTENDED, PY_FIXTURES, ROOT

SEED = 20261207
EXAMPLES_PER_OPERATION = 10  # the coverage phase adds its boundary cases: 50 to 3 600 requests a server
# Python fixtures whose answers are not a function of the request: nap sleeps up to 60 s per call
# and answers with times and its pid.
NOT_COMPARED = {"nap"}
_FOLDERS = (PY_FIXTURES, ROOT / "python" / "tests" / "fixtures")
PY_MODULES = sorted(
    {p.parent.name for folder in _FOLDERS for p in folder.glob("*/tesseract_api.py")} - NOT_COMPARED - EXTENDED
)
# The examples this build made (TESSCPP_EXAMPLES_DIR, as CTest sets it).
_BUILT = Path(os.environ.get("TESSCPP_EXAMPLES_DIR", "/nonexistent"))
CPP_EXAMPLES = sorted(p.name[3:-3] for p in _BUILT.glob("lib*.so"))


def _run(url: str, report: Path) -> list[dict]:
    """The requests schemathesis sent and the answers, in order (its HAR report)."""
    command = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{url}/openapi.json", "--seed", str(SEED),
               "--generation-deterministic", "--continue-on-failure", "-n", str(EXAMPLES_PER_OPERATION),
               "--workers", "1", "--request-timeout", "60", "--report", "har", "--report-dir", str(report)]  # fmt: skip
    # In the report's folder: schemathesis keeps a cache (.schemathesis/) where it runs.
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=report.parent)
    hars = list(report.glob("har-*.json"))
    assert done.returncode in (0, 1) and len(hars) == 1, f"schemathesis failed to run:\n{done.stdout}\n{done.stderr}"
    return json.loads(hars[0].read_text())["log"]["entries"]


def _exchange(entry: dict, server) -> tuple[str, str, str, int, str]:
    """(method, path, body sent, status, body answered), each server's own directories named alike."""
    request, response = entry["request"], entry["response"]
    answer = response["content"].get("text", "")
    for path, name in ((server.output_path, "<output>"), (server.input_path, "<input>")):
        answer = answer.replace(str(path), name)
    # pydantic's summaries name functions by address, which no two processes share.
    answer = re.sub(r" at 0x[0-9a-f]+", " at 0x?", answer)
    path = request["url"].split("/", 3)[3]
    return request["method"], path, request.get("postData", {}).get("text", ""), response["status"], answer


def _around(text: str, other: str) -> str:
    """`text` near where it first differs from `other`."""
    at = next((i for i, (a, b) in enumerate(zip(text, other, strict=False)) if a != b), min(len(text), len(other)))
    return ("..." if at > 150 else "") + text[max(0, at - 150) : at + 250]


def _statuses(exchanges: list[tuple]) -> str:
    counts = Counter(e[3] for e in exchanges)
    return ", ".join(f"{status}: {counts[status]}" for status in sorted(counts))


def _alive(server) -> None:
    assert server.alive() and requests.get(f"{server.url}/health", timeout=30).status_code == 200, server.logs()


@pytest.mark.parametrize("module", PY_MODULES)
def test_a_python_module_answers_every_request_as_tesseract_runtime(servers, backend, tmp_path, module):
    if backend != "tesscpp-py":
        pytest.skip("compares `tesscpp serve tesseract_api.py` with tesseract-runtime (--server-backend=tesscpp-py)")
    # Both with one hash seed: messages that print a set (tesseract-core's "keys conforming to
    # vjp_outputs: {'u', 'total'}") then list it in one order.
    seeded = {"env_extra": {"PYTHONHASHSEED": "0"}}
    ours, theirs = servers.fresh(module, **seeded), servers.fresh(module, backend="python", **seeded)
    mine = [_exchange(e, ours) for e in _run(ours.url, tmp_path / "ours")]
    reference = [_exchange(e, theirs) for e in _run(theirs.url, tmp_path / "theirs")]
    _alive(ours)
    assert [m[:3] for m in mine] == [r[:3] for r in reference], "the two runs sent different requests"
    differences = [(m, r) for m, r in zip(mine, reference, strict=True) if m[3:] != r[3:]]
    report = "\n".join(f"{m[0]} {m[1]} {m[2][:300]!r}\n  ours:   {m[3]} {_around(m[4], r[4])!r}\n"
                       f"  theirs: {r[3]} {_around(r[4], m[4])!r}" for m, r in differences[:10])  # fmt: skip
    assert not differences, f"{len(differences)} of {len(mine)} answers differ:\n{report}"
    print(f"\nschemathesis | {module} | {len(mine)} | {_statuses(mine)} | all answers byte-identical")


@pytest.mark.parametrize("example", CPP_EXAMPLES or ["(no examples built)"])
def test_a_cpp_example_answers_as_its_python_twin_or_fails_only_by_its_own_word(servers, backend, tmp_path, example):
    if backend != "tesscpp":
        pytest.skip("the C++ examples on `tesscpp serve` (--server-backend=tesscpp)")
    assert CPP_EXAMPLES, "TESSCPP_EXAMPLES_DIR holds no built examples"
    server = servers.fresh(example)  # its log holds this run's failures only
    mine = [_exchange(e, server) for e in _run(server.url, tmp_path / "ours")]
    _alive(server)
    if (PY_FIXTURES / example / "tesseract_api.py").exists():
        # Its Python twin on tesseract-runtime: the same status for every request (wording may
        # differ: docs/compatibility.md).
        theirs = servers.reference(example)
        reference = [_exchange(e, theirs) for e in _run(theirs.url, tmp_path / "theirs")]
        assert [m[:3] for m in mine] == [r[:3] for r in reference], "the two runs sent different requests"
        differences = [(m, r) for m, r in zip(mine, reference, strict=True) if m[3] != r[3]]
        report = "\n".join(f"{m[0]} {m[1]} {m[2][:300]!r}\n  ours:   {m[3]} {m[4][:300]!r}\n  "
                           f"theirs: {r[3]} {r[4][:300]!r}" for m, r in differences[:10])  # fmt: skip
        assert not differences, f"{len(differences)} of {len(mine)} statuses differ from the twin's:\n{report}"
    # Every 500 is a failure the component reported (a returned Status, logged as "Error"), as a
    # Python module's raised exception is; never one of the runtime's or a thrown exception.
    failures = re.findall(r"^tesscpp: \S+ failed: ([^:]+):", server.logs(limit=10**8), re.MULTILINE)
    assert len(failures) == sum(m[3] >= 500 for m in mine), failures
    assert set(failures) <= {"Error"}, failures
    twin = "statuses equal the Python twin's" if (PY_FIXTURES / example / "tesseract_api.py").exists() else "no twin"
    print(f"\nschemathesis | {example} (C++) | {len(mine)} | {_statuses(mine)} | {twin}; 500s: the component's own")
