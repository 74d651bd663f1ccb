"""Leaf paths and the schema's differentiable templates, for both bridges.

A leaf's place in the inputs or outputs is a tuple of segments, ``str`` for
dict keys and model fields and ``int`` for list positions, so a key holding a
dot stays one segment. The schema's templates (``params.{}``, ``xs.[]``) are
parsed by tesscpp's C++ path grammar (``tesscpp::Path``) and match such tuples
segment by segment; the name a gradient endpoint expects for a concrete leaf
(its "wire" name, ``params.{p}``, ``xs.[2]``) is formatted by the same grammar,
which escapes braces and backslashes inside keys as tesseract-core 1.15 does.
"""

from __future__ import annotations

from . import _tesscpp

Segment = str | int
LeafPath = tuple[Segment, ...]
# A parsed template: (kind, value) per segment, kind one of "field", "key",
# "index", "any_key", "any_index" (tesscpp::PathSegment::Kind).
Template = tuple[tuple[str, Segment], ...]


def segment_matches(template: tuple[str, Segment], segment: Segment) -> bool:
    kind, value = template
    if isinstance(segment, int):
        return kind == "any_index" or (kind == "index" and value == segment)
    return kind == "any_key" or (kind in ("field", "key") and value == segment)


def _concrete(template: tuple[str, Segment], segment: Segment) -> tuple[str, Segment]:
    """The segment of a concrete path that ``template`` matched."""
    kind = template[0]
    if kind in ("any_key", "key"):
        return ("key", segment)
    if kind in ("any_index", "index"):
        return ("index", segment)
    return ("field", segment)


def parse(text: str) -> Template:
    try:
        return tuple(_tesscpp.parse_path(text))
    except ValueError as e:
        raise ValueError(f"the Tesseract declares the differentiable path {text!r}, which is not a path: {e}") from None


def match(path: LeafPath, templates: list[Template]) -> tuple[str, Template] | None:
    """The wire name of ``path`` and the template covering it, or None."""
    for template in templates:
        if len(template) == len(path) and all(map(segment_matches, template, path)):
            return _tesscpp.format_path(list(map(_concrete, template, path))), template
    return None


def plain_name(path: LeafPath) -> str:
    """The protocol's spelling of a path no template covers (fields and indices)."""
    return _tesscpp.format_path([("index", s) if isinstance(s, int) else ("field", s) for s in path])
