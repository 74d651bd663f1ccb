"""Forward reuse in a ``tesseract_api.py`` served by tesscpp (docs/forward-reuse.md).

When a client asks an apply to keep its forward (tesscpp's extension of the
protocol; ``tesscpp.torch.apply_tesseract`` does by default), the module's
``apply`` may hand state to :func:`keep`, and the derivative endpoints at the
same inputs find it with :func:`kept`. Anywhere else — tesseract-runtime, a call
nobody asked to keep, a derivative call whose apply is gone — ``keep`` does
nothing and ``kept`` is None, so the module recomputes as it always did and runs
unchanged on tesseract-runtime::

    try:
        from tesscpp import reuse
    except ImportError:  # served without tesscpp installed
        reuse = None

The helpers do it in a line for JAX and torch code: in ``apply``,
``y = reuse.jax_apply(f, x)`` (``f(x)``, keeping ``jax.vjp``'s pullback when
asked); in ``vector_jacobian_product``, ``pullback = reuse.jax_pullback(f, x)``
(the kept pullback, or a new one). ``torch_apply``/``torch_pullback`` do the
same with ``torch.func.vjp``. tesseract-core's own JAX cache
(``set_jax_vjp_cache_size``) keeps working under tesscpp for modules on its
JAX recipe; which to use when is in docs/forward-reuse.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["jax_apply", "jax_pullback", "keep", "keep_requested", "kept", "torch_apply", "torch_pullback"]


@dataclass
class _Slot:
    """What one apply kept, with the bytes it holds."""

    state: Any = None
    host_bytes: int = 0
    device_bytes: int = 0


_MAX_BYTES = 2**62

_slot: ContextVar[_Slot | None] = ContextVar("tesscpp_reuse_slot", default=None)
_kept: ContextVar[Any] = ContextVar("tesscpp_reuse_kept", default=None)


def keep_requested() -> bool:
    """In apply: whether a client asked to keep state for the derivative calls
    at these inputs (skip the work of making it otherwise)."""
    return _slot.get() is not None


def keep(state: Any, *, host_bytes: int | None = None, device_bytes: int | None = None) -> None:
    """In apply: keeps `state` for the derivative calls at the same inputs, when
    asked (else does nothing). Its bytes count against the server's budgets:
    without them they are estimated from the arrays it holds (NumPy, JAX and
    torch arrays, in containers, pytrees and closures); say them for state the
    estimate cannot see into."""
    slot = _slot.get()
    if slot is None or state is None:
        return
    host, device = _estimate(state) if host_bytes is None or device_bytes is None else (0, 0)
    slot.state = state
    # Held within what the server counts in (what no budget can hold is not kept there).
    slot.host_bytes = min(max(0, host if host_bytes is None else int(host_bytes)), _MAX_BYTES)
    slot.device_bytes = min(max(0, device if device_bytes is None else int(device_bytes)), _MAX_BYTES)


def kept() -> Any:
    """In a derivative endpoint: what an apply at these same inputs kept, or None."""
    return _kept.get()


@contextlib.contextmanager
def _scope(keep_asked: bool, found: Any) -> Iterator[_Slot | None]:
    """For tesscpp's Python host: one call's slot (apply, when asked) and what
    it found (a derivative call)."""
    slot = _Slot() if keep_asked else None
    slot_token, kept_token = _slot.set(slot), _kept.set(found)
    try:
        yield slot
    finally:
        _slot.reset(slot_token)
        _kept.reset(kept_token)


def jax_apply(fn: Callable[..., Any], *primals: Any) -> Any:
    """``fn(*primals)``; when asked to keep, through ``jax.vjp``, its pullback kept."""
    if not keep_requested():
        return fn(*primals)
    import jax

    out, pullback = jax.vjp(fn, *primals)
    keep(pullback)
    return out


def jax_pullback(fn: Callable[..., Any], *primals: Any) -> Callable[..., Any]:
    """The pullback an apply at these inputs kept (``jax_apply``), or ``jax.vjp``'s now."""
    found = kept()
    if found is not None:
        return found
    import jax

    return jax.vjp(fn, *primals)[1]


def torch_apply(fn: Callable[..., Any], *primals: Any) -> Any:
    """``fn(*primals)``; when asked to keep, through ``torch.func.vjp``, its pullback kept."""
    if not keep_requested():
        return fn(*primals)
    import torch.func

    made = torch.func.vjp(fn, *primals)  # (outputs, pullback)
    keep(made[1])
    return made[0]


def torch_pullback(fn: Callable[..., Any], *primals: Any) -> Callable[..., Any]:
    """The pullback an apply at these inputs kept (``torch_apply``), or ``torch.func.vjp``'s now."""
    found = kept()
    if found is not None:
        return found
    import torch.func

    return torch.func.vjp(fn, *primals)[1]


def _estimate(state: Any) -> tuple[int, int]:
    """(host, device) bytes of the arrays `state` reaches, each counted once."""
    seen: set[int] = set()
    storages: set[tuple[str, int]] = set()  # torch tensors: views and unpacked saved ones share memory
    nodes: set[int] = set()  # autograd nodes walked: each graph once, however many tensors lead to it
    kept_alive: list[Any] = []  # unpacked saved tensors, so that no id in `seen` is reused meanwhile
    totals = [0, 0]

    def visit(obj: Any, depth: int) -> None:
        if depth > 8 or id(obj) in seen:
            return
        seen.add(id(obj))
        on_device, size = _array_bytes(obj)
        if size is not None:
            storage = _torch_storage(obj)
            if storage is not None:  # the whole storage, once
                size = 0 if storage[0] in storages else storage[1]
                storages.add(storage[0])
            totals[on_device] += size
            # A torch tensor's autograd graph holds what its backward needs
            # (torch.func.vjp's pullback reaches it through its outputs).
            saved = _torch_saved_tensors(obj, nodes)
            kept_alive.extend(saved)
            for tensor in saved:
                visit(tensor, depth)
            return
        children: list[Any] = []
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children = list(obj)
        elif "jax" in sys.modules:  # pytrees, jax.vjp's pullback (a Partial) among them
            children = _pytree_leaves(obj)
        closure = getattr(obj, "__closure__", None)
        if closure:
            children += [cell.cell_contents for cell in closure if _filled(cell)]
        for child in children:
            visit(child, depth + 1)

    visit(state, 0)
    return totals[0], totals[1]


def _torch_storage(obj: Any) -> tuple[tuple[str, int], int] | None:
    """Where a torch tensor's memory is (device, address) and its bytes; None
    for anything else, and for torch.func's wrappers, which have no storage."""
    if "torch" not in sys.modules:
        return None
    import torch

    if not isinstance(obj, torch.Tensor) or obj.nelement() == 0:
        return None
    try:
        storage = obj.untyped_storage()
    except NotImplementedError:
        return None
    return (str(obj.device), storage.data_ptr()), storage.nbytes()


def _array_bytes(obj: Any) -> tuple[int, int | None]:
    """(1 on a device else 0, bytes) of an array; (0, None) for anything else."""
    if "torch" in sys.modules:
        import torch

        if isinstance(obj, torch.Tensor):
            return int(obj.device.type != "cpu"), obj.element_size() * obj.nelement()
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int) and hasattr(obj, "dtype"):
        devices = getattr(obj, "devices", None)  # a JAX array's; NumPy's live on the host
        platforms = {device.platform for device in devices()} if callable(devices) else {"cpu"}
        return int(bool(platforms - {"cpu"})), nbytes
    return 0, None


_saved_names: dict[type, list[str]] = {}


def _torch_saved_tensors(obj: Any, seen: set[int]) -> list[Any]:
    """The tensors saved in the autograd graph behind torch tensor `obj`
    (none for anything else): each node's `_saved_*` attributes, and a custom
    Function's saved_tensors; nodes in `seen` (walked already) are skipped."""
    node = getattr(obj, "grad_fn", None) if "torch" in sys.modules else None
    if node is None:
        return []
    import torch

    found: list[Any] = []
    pending = [node]
    while pending:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        kind = type(node)
        if kind not in _saved_names:  # dir() once per node type: graphs have thousands of nodes
            _saved_names[kind] = [name for name in dir(node) if name.startswith("_saved_")]
        for name in [*_saved_names[kind], "saved_tensors"]:
            try:
                value = getattr(node, name, None)
            except RuntimeError:  # freed by a backward that ran already
                continue
            values = value if isinstance(value, (tuple, list)) else [value]
            found += [v for v in values if isinstance(v, torch.Tensor)]
        pending += [following for following, _ in node.next_functions]
    return found


def _pytree_leaves(obj: Any) -> list[Any]:
    if "jax" not in sys.modules:
        return []
    import jax

    leaves = jax.tree_util.tree_leaves(obj)
    return [] if leaves == [obj] else leaves


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True
