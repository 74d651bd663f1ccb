"""tesscpp.cuda: moving batches of CPU tensors to the GPU.

``transfer_h2d`` is spdl's ``transfer_tensor_h2d`` on tesscpp's C++ engine:
every CPU tensor in a nested batch is copied to the GPU on a stream of the
calling thread's own, through pinned staging buffers filled by several
threads (pageable sources) or directly by DMA (pinned sources), and the
current stream is made to wait for the copies on the GPU. The host does not
wait for the copies to finish.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

import torch

from . import _tesscpp

__all__ = ["transfer_h2d", "transport_counters"]

_cache = threading.local()

# Sources up to this size get their destinations carved out of a few
# allocations per batch (arenas): for 1000 x 64 KiB, one torch allocation and
# one free per tensor cost more than their copies
# (bench/results/gpu-transport-results-20261203-h200.md §5.1).
_ARENA_MAX_SOURCE = 1 << 20
_ARENA_MAX_BYTES = 8 << 20
_ARENA_ALIGN = 256  # bytes between destinations, as torch's allocator rounds


class _Arena:
    """One allocation that destinations of one dtype are carved from, in order."""

    __slots__ = ("buffer", "address", "itemsize", "used", "capacity", "next_bytes")

    def __init__(self, dtype: torch.dtype, elements: int, itemsize: int, next_bytes: int, arenas: _Arenas):
        self.buffer = torch.empty(elements, dtype=dtype, device=arenas.device)
        self.buffer.record_stream(arenas.consumer)
        self.address = self.buffer.data_ptr()
        self.itemsize, self.used, self.capacity, self.next_bytes = itemsize, 0, elements, next_bytes


class _Arenas:
    """One batch's arenas, one open per dtype; each is twice the size of the
    previous one of its dtype (from 16 sources' worth), up to _ARENA_MAX_BYTES,
    so a batch with few small tensors allocates little beyond them."""

    def __init__(self, device: torch.device, consumer: torch.cuda.Stream) -> None:
        self.device, self.consumer = device, consumer
        self.open: dict[torch.dtype, _Arena] = {}

    def take(self, source: torch.Tensor) -> tuple[torch.Tensor, int]:
        """A destination shaped like `source` (contiguous) and its address."""
        n = source.numel()
        arena = self.open.get(source.dtype)
        if arena is None or arena.used + n > arena.capacity:
            itemsize = source.element_size()
            size = arena.next_bytes if arena is not None else 16 * source.nbytes
            arena = self.open[source.dtype] = _Arena(source.dtype, max(n, size // itemsize), itemsize,
                                                     min(2 * size, _ARENA_MAX_BYTES), self)  # fmt: skip
        at = arena.used
        step = max(1, _ARENA_ALIGN // arena.itemsize)
        arena.used = at + (n + step - 1) // step * step
        return arena.buffer.as_strided(source.shape, source.stride(), at), arena.address + at * arena.itemsize


def _transfer_stream(device: torch.device) -> torch.cuda.ExternalStream:
    """This thread's transfer stream of `device` (tesscpp's, which the copies run on), as a torch stream."""
    streams = getattr(_cache, "streams", None)
    if streams is None:
        streams = _cache.streams = {}
    stream = streams.get(device.index)
    if stream is None:
        stream = streams[device.index] = torch.cuda.ExternalStream(_tesscpp._h2d_stream(device.index), device=device)
    return stream


def transport_counters() -> dict[str, int]:
    """What this process's cuda_ipc transport has done so far (counts since start).

    ``legacy_exports``: CUDA tensors sent by legacy IPC handle (no copy);
    ``vmm_exports``: sent by reference to their VMM allocations (cuda_vmm, no
    copy); ``staged_exports``: copied into a staging buffer first;
    ``vmm_fds_exported``: VMM allocations turned into a file descriptor for a
    peer (once per allocation); ``vmm_maps_opened`` / ``vmm_maps_reused``:
    peers' VMM tensors mapped here anew / found mapped already.
    """
    return dict(_tesscpp._transport_counters())


def transfer_h2d(batch: Any, *, num_caches: int = 4, device: torch.device | str | int | None = None) -> Any:
    """The batch with every CPU tensor replaced by a copy on a CUDA device.

    Args:
        batch: tensors nested in dicts, lists, tuples (named ones too) and
            dataclasses; other leaves are returned as they are, and tensors
            already on a GPU are not copied.
        num_caches: batches (their pinned sources and their copies) kept alive
            by this thread, so that pinned sources are not freed or refilled
            while their copy may still run; the oldest is waited for when it
            leaves.
        device: the CUDA device (default: the current one).

    Returns:
        A batch of the same structure. Its tensors may be used on the current
        stream at once: that stream waits for the copies. Copies of tensors
        of up to 1 MiB are views into a few allocations shared within the
        batch (per dtype, 8 MiB at most each), so that one kept tensor keeps
        its allocation alive; larger ones are allocations of their own.
    """
    if num_caches < 1:
        raise ValueError(f"num_caches must be at least 1, got {num_caches}")
    target = _cuda_device(device)
    copies: list[tuple[int, int, int]] = []
    sources: list[torch.Tensor] = []
    # Destinations are written on our stream before the consumer stream
    # touches them. Allocated for the consumer stream, torch could hand them
    # a block just freed there whose readers are still queued, which our copy
    # would overwrite; allocated for ours, their use on the consumer stream is
    # recorded as they are made (record_stream), as torch asks of memory used
    # there.
    consumer = torch.cuda.current_stream(target)
    arenas = _Arenas(target, consumer)

    def move(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if value.device.type != "cpu":
                return value
            # Each torch call costs ~0.1-2 µs per tensor, which is most of the
            # time for a batch of small tensors
            # (bench/results/gpu-transport-results-20261203-h200.md §5):
            # plain contiguous sources (the usual case) are read in place, and
            # empty_like allocates at half torch.empty's cost.
            source = value.detach() if value.requires_grad else value  # kept: not its graph
            if not source.is_contiguous() or source.is_conj() or source.is_neg():
                source = source.contiguous().resolve_conj().resolve_neg()
            nbytes = source.nbytes
            if 0 < nbytes <= _ARENA_MAX_SOURCE:
                destination, address = arenas.take(source)
            else:
                destination = torch.empty_like(source, device=target, memory_format=torch.contiguous_format)
                address = destination.data_ptr()
                destination.record_stream(consumer)
            if nbytes:
                copies.append((source.data_ptr(), address, nbytes))
                sources.append(source)
            return destination
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: move(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return dataclasses.replace(value, **changes)
        if isinstance(value, dict):
            return type(value)((key, move(item)) for key, item in value.items())
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(move(item) for item in value))
        if isinstance(value, (list, tuple)):
            return type(value)(move(item) for item in value)
        return value

    with torch.cuda.stream(_transfer_stream(target)):
        moved = move(batch)
    _keep(_tesscpp._copy_h2d(copies, target.index, consumer.cuda_stream), sources, moved, num_caches)
    return moved


def _cuda_device(device: torch.device | str | int | None) -> torch.device:
    """transfer_h2d's target: a CUDA device with its index (the current one by default)."""
    target = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if target.type != "cuda":
        raise ValueError(f"transfer_h2d copies to a CUDA device, got {target}")
    if target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    return target


def _keep(done: Any, sources: list[torch.Tensor], moved: Any, num_caches: int) -> None:
    """Keeps a batch's sources and copies alive with its transfer until
    ``num_caches`` newer batches of this thread replace it (waiting for the
    oldest as it leaves)."""
    cache = getattr(_cache, "batches", None)
    if cache is None:
        cache = _cache.batches = collections.deque()
    cache.append((done, sources, moved))
    while len(cache) > num_caches:
        cache.popleft()[0].wait()
