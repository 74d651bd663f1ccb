"""Leaves of JAX pytrees as the Tesseract protocol names them.

A leaf's path joins its dict keys and ``[i]`` list indices with dots
(``a.b``, ``xs.[2]``); where the schema's ``differentiable_arrays`` template
has ``{}`` (a dict field of arbitrary keys) the key is written ``{key}``. A
leaf whose path matches no template is not differentiable. These are the
names tesseract-jax uses for jvp_inputs, tangent_vector and the answers'
keys, so both bridges send the same requests.
"""

from __future__ import annotations

from typing import Any

import jax

Segment = str | int  # a dict key or a list index: where a leaf is in a request or an answer


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


def _plain(path: tuple[Segment, ...]) -> list[str]:
    return [f"[{s}]" if isinstance(s, int) else str(s) for s in path]


def match(path: tuple[Segment, ...], templates: dict[str, Any]) -> tuple[str, str | None]:
    """The protocol's name of the leaf at `path`, and the differentiable
    template it matches (None: not differentiable)."""
    parts = _plain(path)
    for template in templates:
        pattern = template.split(".")
        if len(pattern) != len(parts):
            continue
        named = []
        for want, got in zip(pattern, parts, strict=True):
            if want == got or (want == "[]" and got.startswith("[")):
                named.append(got)
            elif want == "{}":
                named.append(f"{{{got}}}")
            else:
                break
        else:
            return ".".join(named), template
    return ".".join(parts), None


def leaf_paths(tree: Any, is_leaf: Any = None) -> list[tuple[Segment, ...]]:
    """The path of every leaf of `tree`, in JAX's flattening order."""
    return [segments(keypath) for keypath, _ in jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]]
