"""The torch bridge's paths: templates parsed and wire names spelled by the
C++ path grammar (tesscpp._tesscpp.parse_path / format_path), as the runtime
reads them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tesscpp import _tesscpp
from tesscpp.torch._paths import Templates
from tesscpp.torch._tree import flatten_inputs, unflatten


def schema(inputs: list[str], outputs: list[str] = ()) -> dict:
    def component(paths):
        return {"differentiable_arrays": {p: {"dtype": "float32"} for p in paths}}

    return {"components": {"schemas": {"ApplyInputSchema": component(inputs), "ApplyOutputSchema": component(outputs)}}}


def test_grammar_round_trips_with_escapes():
    segments = _tesscpp.parse_path(r"a.{k.e\}y}.[3].{}.[]")
    assert segments == [("field", "a"), ("key", "k.e}y"), ("index", 3), ("any_key", ""), ("any_index", "")]
    assert _tesscpp.format_path(segments) == r"a.{k.e\}y}.[3].{}.[]"
    with pytest.raises(ValueError, match="empty"):
        _tesscpp.parse_path("a..b")
    with pytest.raises(ValueError, match="kind"):
        _tesscpp.format_path([("nonsense", 1)])


def test_wire_names_escape_keys_and_literal_keys_match():
    templates = Templates(schema(["params.{}", "xs.[].w", "fixed.{a.b}"], ["out"]))
    assert templates.input_slot(("params", "x{1}")) == (r"params.{x\{1\}}", torch.float32)
    assert templates.input_slot(("xs", 2, "w")) == ("xs.[2].w", torch.float32)
    # A literal key in a template matches that key only, dots and all.
    assert templates.input_slot(("fixed", "a.b")) == ("fixed.{a.b}", torch.float32)
    assert templates.input_slot(("fixed", "c")) is None
    assert templates.input_slot(("xs", "2", "w")) is None  # a key is not a list position
    assert templates.output_wire(("out",)) == "out"


def test_a_bad_declared_path_is_named():
    with pytest.raises(ValueError, match="'a..b'"):
        Templates(schema(["a..b"]))


def test_inputs_flatten_in_one_walk_and_come_back():
    templates = Templates(schema(["params.{}"]))
    a = torch.ones(2)
    inputs = {
        "params": {"p": a, "q": 3},
        "arrays": [np.zeros(1), {"n": np.ones(1)}, (np.ones(2),)],
        "plain": {"x": [1, 2]},
        "empty": [],
    }
    leaves = flatten_inputs(inputs, templates)
    paths = [path for path, _ in leaves]
    # Template-opened, array-opened (tuples stay whole), and whole containers.
    assert paths == [("params", "p"), ("params", "q"), ("arrays", 0), ("arrays", 1, "n"), ("arrays", 2),
                     ("plain",), ("empty",)]
    assert leaves[0][1] is a
    rebuilt = unflatten(leaves)
    assert rebuilt["plain"] == {"x": [1, 2]} and rebuilt["empty"] == []
    assert rebuilt["arrays"][1]["n"] is inputs["arrays"][1]["n"]
