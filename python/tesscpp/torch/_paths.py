"""The differentiable templates of one OpenAPI document, as the torch bridge
asks about them (paths and their matching: ``tesscpp._paths``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

from .._paths import LeafPath, match, parse, segment_matches

T = TypeVar("T")

# Remembered template answers per OpenAPI document at most.
_MEMO_SIZE = 4096


def _torch_dtype(name: Any) -> torch.dtype | None:
    dtype = getattr(torch, str(name), None)
    return dtype if isinstance(dtype, torch.dtype) else None


class Templates:
    """The differentiable paths of one OpenAPI document, parsed."""

    def __init__(self, schema: dict) -> None:
        schemas = schema.get("components", {}).get("schemas", {})

        def declared(component: str) -> dict[str, dict]:
            return schemas.get(component, {}).get("differentiable_arrays", {})

        inputs = {parse(t): spec for t, spec in sorted(declared("ApplyInputSchema").items())}
        self.inputs = list(inputs)
        self.outputs = [parse(t) for t in sorted(declared("ApplyOutputSchema"))]
        self._both = self.inputs + self.outputs
        # The dtype each input template declares: a device transport sends the
        # bytes as they are, so tensors are cast to it first.
        self.input_dtypes = {t: _torch_dtype(spec.get("dtype")) for t, spec in inputs.items()}
        # Answers per concrete path: a training loop asks the same questions
        # about the same paths on every call.
        self._memo: dict[tuple[str, LeafPath], Any] = {}

    def _remember(self, question: str, path: LeafPath, answer: Callable[[], T]) -> T:
        key = (question, path)
        try:
            return self._memo[key]
        except KeyError:
            pass
        # Dict keys chosen at run time could make the paths unbounded.
        if len(self._memo) >= _MEMO_SIZE:
            self._memo.clear()
        value = self._memo[key] = answer()
        return value

    def reaches_below(self, path: LeafPath) -> bool:
        """Whether a template is longer than ``path`` and matches it so far."""
        depth = len(path)
        return self._remember(
            "below", path, lambda: any(len(t) > depth and all(map(segment_matches, t, path)) for t in self._both)
        )

    def output_wire(self, path: LeafPath) -> str | None:
        """Wire name of a differentiable output leaf, or None."""

        def answer() -> str | None:
            found = match(path, self.outputs)
            return None if found is None else found[0]

        return self._remember("output", path, answer)

    def input_slot(self, path: LeafPath) -> tuple[str, torch.dtype | None] | None:
        """Wire name and declared dtype of a differentiable input leaf, or None."""

        def answer() -> tuple[str, torch.dtype | None] | None:
            found = match(path, self.inputs)
            return None if found is None else (found[0], self.input_dtypes[found[1]])

        return self._remember("input", path, answer)


# Parsed templates per OpenAPI document. Clients hand out the same dict for as
# long as a connection lasts, so its identity is the key; the entry holds the
# dict, which keeps the identity from being reused. A re-served Tesseract gets
# a new dict and so a new entry.
_TEMPLATE_CACHE: dict[int, tuple[dict, Templates]] = {}
_TEMPLATE_CACHE_SIZE = 64


def templates_of(schema: dict) -> Templates:
    cached = _TEMPLATE_CACHE.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    parsed = Templates(schema)
    if len(_TEMPLATE_CACHE) >= _TEMPLATE_CACHE_SIZE:
        _TEMPLATE_CACHE.pop(next(iter(_TEMPLATE_CACHE)))
    _TEMPLATE_CACHE[id(schema)] = (schema, parsed)
    return parsed


def dotted(path: LeafPath) -> str:
    """A path for messages."""
    return ".".join(str(part) for part in path)
