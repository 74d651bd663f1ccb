"""Leaves of JAX pytrees as the Tesseract protocol names them.

A leaf's path is its dict keys and list indices; its wire name and whether it
is differentiable come from the schema's ``differentiable_arrays`` templates,
matched and spelled by tesscpp's path grammar (``tesscpp._paths``, shared with
the torch bridge): ``a.b``, ``xs.[2]``, ``{key}`` where the template has a dict
of arbitrary keys. tesseract-jax names leaves the same way, so both bridges
send the same requests.
"""

from __future__ import annotations

from typing import Any

import jax

from .._paths import Segment, Template, match, parse, plain_name


def templates(declared: dict[str, Any]) -> dict[Template, Any]:
    """The schema's differentiable templates, parsed, with what each declares."""
    return {parse(text): spec for text, spec in sorted(declared.items())}


def name(path: tuple[Segment, ...], parsed: dict[Template, Any]) -> tuple[str, Template | None]:
    """The wire name of the leaf at `path`, and the template it matches (None:
    not differentiable)."""
    found = match(path, list(parsed))
    return (plain_name(path), None) if found is None else found


def segments(keypath: tuple[Any, ...]) -> tuple[Segment, ...]:
    """A JAX key path as dict keys and list indices."""
    out: list[Segment] = []
    for entry in keypath:
        if isinstance(entry, jax.tree_util.DictKey):
            out.append(entry.key)
        elif isinstance(entry, jax.tree_util.SequenceKey):
            out.append(entry.idx)
        else:
            raise TypeError(f"tesscpp.jax: inputs and outputs are dicts and lists, not {type(entry).__name__}")
    return tuple(out)


def leaf_paths(tree: Any, is_leaf: Any = None) -> list[tuple[Segment, ...]]:
    """The path of every leaf of `tree`, in JAX's flattening order."""
    return [segments(keypath) for keypath, _ in jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]]
