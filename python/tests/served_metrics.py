"""A served Tesseract's /metrics as numbers, for the tests of forward reuse
(importable without pytest's conftest: the GPU suites run with --noconftest)."""

from __future__ import annotations

import urllib.request


def metric_values(tesseract) -> dict[str, float]:
    """Each sample line of `tesseract`'s /metrics: its name with labels -> value."""
    with urllib.request.urlopen(tesseract.url + "/metrics") as answer:
        text = answer.read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
