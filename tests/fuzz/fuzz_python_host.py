"""Fuzz target: a tesseract_api.py served by tesscpp's runtime (atheris, coverage-guided).

The request path of `tesscpp serve tesseract_api.py` in one process
(`tesscpp._tesscpp._ModuleRuntime`, docs/python-host.md): the C++ JSON
reader and array codecs, the hand-over of request values to Python objects,
tesseract-core's and pydantic's validation, the module's endpoint, the answer
back into C++ and its encoding. The first input byte picks the module (the
pyfeatures fixture: validators, constraints, unions; or vectoradd: arrays)
and the endpoint, the rest is the request body. Whatever arrives, the runtime
must answer: any Python exception out of `handle`, an abort or a signal is a
crash, and so is an answer that is not one the protocol has (200 or 4xx with
a JSON body, 500 with tesseract-runtime's text).

atheris instruments the Python code on the path (tesscpp's host module,
tesseract-core's runtime, pydantic, FastAPI) for coverage; the C++ side is
the release build's.

  python tests/fuzz/fuzz_python_host.py -max_total_time=30 <work dir> tests/fuzz/corpus/python_host

(`make test` runs it for TESS_PYTHON_FUZZ_SECONDS, `make fuzz` for FUZZ_SECONDS.)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[2]
MODULES = [ROOT / "tests" / "fixtures" / "python" / name / "tesseract_api.py" for name in ("pyfeatures", "vectoradd")]
TARGETS = ["/apply?run_id=fuzz", "/jacobian?run_id=fuzz", "/jacobian_vector_product?run_id=fuzz",
           "/vector_jacobian_product?run_id=fuzz", "/abstract_eval", "/apply?run_id=.."]  # fmt: skip
CONTENT_TYPES = ["application/json", "application/vnd.api+json", "text/plain", None]
ANSWERED = {200, 400, 404, 405, 422, 500}

with atheris.instrument_imports():
    import tesseract_core.runtime  # noqa: F401 - instrumented for coverage

    import tesscpp._python_host  # noqa: F401
from tesscpp import _tesscpp  # noqa: E402 - the extension is not Python code to instrument


def _runtimes() -> list:
    work = Path(tempfile.mkdtemp(prefix="tesscpp-fuzz-python-host-"))
    settings = [("output_path", str(work)), ("input_path", str(work)), ("debug", "0")]
    return [_tesscpp._ModuleRuntime(str(module), settings) for module in MODULES]


RUNTIMES: list = []


def test_one_input(data: bytes) -> None:
    if not data:
        return
    runtime = RUNTIMES[data[0] & 1]
    target = TARGETS[(data[0] >> 1) % len(TARGETS)]
    content_type = CONTENT_TYPES[(data[0] >> 4) % len(CONTENT_TYPES)]
    status, body = runtime.handle("POST", target, content_type, data[1:])
    if status not in ANSWERED:
        raise AssertionError(f"status {status} for {data!r}: {body[:500]!r}")
    if status == 500:
        if body != b"Internal Server Error":
            raise AssertionError(f"a 500 with a body of its own: {body[:500]!r}")
        return
    json.loads(body)  # 200 and 4xx answers are JSON


def main() -> None:
    os.environ.setdefault("TESSERACT_DEBUGPY_PORT", "0")
    RUNTIMES.extend(_runtimes())
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
