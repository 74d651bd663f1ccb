"""Inputs and outputs as one flat list of (path, leaf) pairs, and back.

A call walks its inputs once (``flatten_inputs``) and carries the flat list
through forward, backward and vmap; the nested dict a client sends is rebuilt
from it (``unflatten``), and the client's result is flattened once
(``flatten_outputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .._paths import Segment
from ._arrays import adopt_device_arrays
from ._paths import LeafPath, Templates


def _children(value: Any) -> list[tuple[Segment, Any]] | None:
    """A container's (segment, child) pairs; None for a leaf (arrays are leaves)."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return None


def _holds_array(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return True
    return any(_holds_array(child) for _, child in _children(value) or ())


def _open_array_containers(path: LeafPath, value: Any, leaves: list[tuple[LeafPath, Any]]) -> bool:
    """Appends ``value`` to ``leaves``, a dict or list that holds arrays split
    into its leaves, so that every tensor reaches the autograd function (and
    torch.vmap sees it) and every NumPy array can be given a batch dimension;
    tuples and containers without arrays stay whole (tesseract-torch 0.2.0
    does the same). Returns whether ``value`` holds an array."""
    if isinstance(value, (dict, list)):
        start = len(leaves)
        holds = False
        for segment, child in _children(value) or ():
            holds = _open_array_containers((*path, segment), child, leaves) or holds
        if not holds:
            del leaves[start:]
            leaves.append((path, value))
        return holds
    leaves.append((path, value))
    return isinstance(value, (torch.Tensor, np.ndarray)) or (isinstance(value, tuple) and _holds_array(value))


def _flatten(tree: dict, templates: Templates, at_leaf: Callable[[LeafPath, Any, list], object]) -> list:
    """Walks a top-level dict, opening a container only where a template
    reaches below it; what is left is handed to ``at_leaf`` with the list of
    (path, leaf) pairs to append to."""
    leaves: list[tuple[LeafPath, Any]] = []

    def visit(path: LeafPath, value: Any) -> None:
        children = _children(value)
        if children and templates.reaches_below(path):
            for segment, child in children:
                visit((*path, segment), child)
        else:
            at_leaf(path, value, leaves)

    for key, value in tree.items():
        visit((key,), value)
    return leaves


def flatten_inputs(tree: dict, templates: Templates) -> list[tuple[LeafPath, Any]]:
    """The (path, leaf) pairs of an input dict in one walk: containers open
    where a template reaches below them or where they hold arrays."""
    return _flatten(tree, templates, _open_array_containers)


def flatten_outputs(tree: dict, templates: Templates) -> list[tuple[LeafPath, Any]]:
    """(path, leaf) pairs of a result dict, opening a container only where a
    template reaches below it; an empty container stays a leaf."""
    return _flatten(tree, templates, lambda path, value, leaves: leaves.append((path, value)))


def all_leaves(path: LeafPath, value: Any) -> list[tuple[LeafPath, Any]]:
    """Every leaf under ``value`` (arrays are leaves), for batching outputs."""
    children = _children(value)
    if not children:
        return [(path, value)]
    return [item for key, child in children for item in all_leaves((*path, key), child)]


class _Level(dict):
    """A container level rebuilt by unflatten (leaves that are dicts are not)."""


def unflatten(leaves: Sequence[tuple[LeafPath, Any]]) -> dict:
    """The nested dict back from (path, leaf) pairs; levels keyed by list
    positions become lists again (so tuples arrive as lists)."""
    if all(len(path) == 1 for path, _ in leaves):
        return {path[0]: value for path, value in leaves}
    root = _Level()
    for path, value in leaves:
        node = root
        for segment in path[:-1]:
            node = node.setdefault(segment, _Level())
        node[path[-1]] = value
    return _rebuild(root)


def _rebuild(node: Any) -> Any:
    if not isinstance(node, _Level):
        return node
    items = {key: _rebuild(child) for key, child in node.items()}
    if items and all(isinstance(key, int) for key in items):
        return [items[key] for key in sorted(items)]
    return items


def outputs_tree(flat_result: Sequence[tuple[LeafPath, Any]], tensors: dict[LeafPath, torch.Tensor]) -> dict:
    """The result as apply_tesseract returns it: the differentiable outputs as
    the autograd function's tensors, device arrays elsewhere adopted by torch."""
    return unflatten(
        [(path, tensors[path] if path in tensors else adopt_device_arrays(value)) for path, value in flat_result]
    )
