"""What the GPU churn tests allow memory to grow by (a module of its own: the
GPU runs use --noconftest, where conftest.py's imports are not all there)."""

from __future__ import annotations


def leak_bound(answer_bytes: list[int]) -> int:
    """How much a churn test lets the device's memory in use grow: half of
    what keeping one answer of each call (`answer_bytes`, one per call) would
    take, and never more than 256 MiB, so that a leak of every answer fails
    and allocator caches below that do not."""
    return min(sum(answer_bytes) // 2, 256 * 2**20)
