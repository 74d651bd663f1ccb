"""Path-typed fields (tesseract-core's InputPath and OutputPath; tesscpp::InputPath and
OutputPath): examples/wordcount on `tesscpp serve` against its Python twin on
tesseract-runtime, each with input and output directories of its own. Answers are
compared with each server's directories written as <IN> and <OUT>."""

from __future__ import annotations

import os

import pytest
import requests

from conftest import start_server

CASES = {
    "relative": "a.txt",
    "nested": "sub/../a.txt",
    "absolute inside": "{IN}/a.txt",
    "missing": "missing.txt",
    "escaping": "../outside.txt",
    "escaping by symlink": "link.txt",
    "not a string": 5,
}


@pytest.fixture(scope="module")
def servers(backend, tmp_path_factory):
    if backend != "tesscpp":
        pytest.skip("the C++ example against tesseract-runtime")
    started = []
    for b in ("tesscpp", "python"):
        root = tmp_path_factory.mktemp(b)
        server = start_server(b, "wordcount", root)
        (server.input_path / "a.txt").write_text("hello world\nsecond line here\n")
        (server.input_path / "sub").mkdir()
        (root / "outside.txt").write_text("secret\n")
        os.symlink(root / "outside.txt", server.input_path / "link.txt")
        started.append(server)
    yield started
    for server in started:
        server.stop()


def _answer(server, text) -> tuple[int, str]:
    if isinstance(text, str):
        text = text.replace("{IN}", str(server.input_path))
    r = requests.post(f"{server.url}/apply", json={"inputs": {"text": text}}, timeout=60)
    body = r.text.replace(str(server.input_path.resolve()), "<IN>").replace(str(server.output_path.resolve()), "<OUT>")
    return r.status_code, body.replace(str(server.input_path.parent.resolve()), "<ROOT>")


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_paths_are_validated_and_answered_as_tesseract_runtime_does(servers, case):
    (status, mine), (ref_status, reference) = (_answer(s, CASES[case]) for s in servers)
    assert (status, mine) == (ref_status, reference)
    assert status == (200 if case in ("relative", "nested", "absolute inside") else 422), mine


def test_output_files_are_written_and_named_relative_to_the_output_directory(servers):
    for server in servers:
        status, body = _answer(server, "a.txt")
        assert status == 200 and '"summary":"summary_a.txt"' in body.replace(" ", ""), body
        assert (server.output_path / "summary_a.txt").read_text() == "lines=2 words=5\n"


def test_the_schema_says_path(servers):
    props = []
    for server in servers:
        schemas = requests.get(f"{server.url}/openapi.json", timeout=30).json()["components"]["schemas"]
        props.append((schemas["Apply_InputSchema"]["properties"]["text"],
                      schemas["Apply_OutputSchema"]["properties"]["summary"]))  # fmt: skip
    assert props[0] == props[1]
    assert props[0][0]["format"] == "path" and props[0][0]["type"] == "string"
