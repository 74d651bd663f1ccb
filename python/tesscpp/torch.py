"""``apply_tesseract``: any Tesseract as a differentiable PyTorch operation.

Which inputs and outputs are differentiable comes from the Tesseract's OpenAPI
document (``differentiable_arrays`` of ``ApplyInputSchema`` and
``ApplyOutputSchema``). Tensors given for differentiable fields enter one
``torch.autograd.Function``; reverse mode calls the Tesseract's
``vector_jacobian_product``, forward mode (``torch.autograd.forward_ad``) its
``jacobian_vector_product``. Everything else is passed through as it is.

Works with ``tesscpp.Tesseract`` objects and with ``tesseract_core.Tesseract``
objects alike: only their public methods are used.

Paths: a leaf's place in the inputs is a tuple of segments, ``str`` for dict
keys and model fields and ``int`` for list positions, so a key holding a dot
stays one segment. Schema templates (``params.{}``, ``xs.[]``) match such paths
segment by segment; the name a gradient endpoint expects for a concrete leaf
(its "wire" name) puts the key or position into the brackets:
``params.{p}``, ``xs.[2]``.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import torch

__all__ = ["apply_tesseract"]

T = TypeVar("T")

# DLPack's device type of CUDA memory (kDLCUDA).
_DLPACK_CUDA = 2

# Values of apply_tesseract's gpu_transport this bridge can drive.
SUPPORTED_GPU_TRANSPORTS = ("none", "cuda_ipc")

Segment = str | int
LeafPath = tuple[Segment, ...]

_DICT_WILDCARD = "{}"
_LIST_WILDCARD = "[]"

# Batching strategies under torch.vmap: tesseract-torch 0.2.0's three, and
# "parallel" (the per-element calls of "sequential", issued concurrently).
VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all", "parallel")

# Remembered template answers per OpenAPI document at most.
_MEMO_SIZE = 4096

# Concurrent calls of one "parallel" batch or batched (co)tangent at most.
_MAX_CONCURRENT_CALLS = 16

_TORCH_FUNC_MESSAGE = (
    "apply_tesseract does not support torch.func transforms "
    "(torch.func.vjp, torch.func.jvp, torch.func.grad, etc.). "
    "Use the standard autograd API instead:\n"
    "  - Reverse mode: result['y'].backward() or torch.autograd.grad()\n"
    "  - Forward mode: torch.autograd.forward_ad (dual tensors)"
)


# ---------------------------------------------------------------------------
# Schema templates


def _segment_matches(template: str, segment: Segment) -> bool:
    if isinstance(segment, int):
        return template == _LIST_WILDCARD
    return template in (_DICT_WILDCARD, segment)


def _escape_key(key: str) -> str:
    """A dict key inside ``{...}``: braces and backslashes are escaped (1.15)."""
    return "".join("\\" + c if c in "{}\\" else c for c in key)


class _Templates:
    """The differentiable paths of one OpenAPI document, split into segments."""

    def __init__(self, schema: dict) -> None:
        schemas = schema.get("components", {}).get("schemas", {})

        def declared(component: str) -> dict[str, dict]:
            return schemas.get(component, {}).get("differentiable_arrays", {})

        inputs = declared("ApplyInputSchema")
        self.inputs = [tuple(t.split(".")) for t in sorted(inputs)]
        self.outputs = [tuple(t.split(".")) for t in sorted(declared("ApplyOutputSchema"))]
        self._both = self.inputs + self.outputs
        # The dtype each input template declares: a device transport sends the
        # bytes as they are, so tensors are cast to it first.
        self.input_dtypes = {tuple(t.split(".")): _torch_dtype(spec.get("dtype")) for t, spec in inputs.items()}
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
            "below", path, lambda: any(len(t) > depth and all(map(_segment_matches, t, path)) for t in self._both)
        )

    def output_wire(self, path: LeafPath) -> str | None:
        """Wire name of a differentiable output leaf, or None."""

        def answer() -> str | None:
            match = _Templates.match(path, self.outputs)
            return None if match is None else match[0]

        return self._remember("output", path, answer)

    def input_slot(self, path: LeafPath) -> tuple[str, torch.dtype | None] | None:
        """Wire name and declared dtype of a differentiable input leaf, or None."""

        def answer() -> tuple[str, torch.dtype | None] | None:
            match = _Templates.match(path, self.inputs)
            return None if match is None else (match[0], self.input_dtypes[match[1]])

        return self._remember("input", path, answer)

    @staticmethod
    def match(path: LeafPath, templates: list[tuple[str, ...]]) -> tuple[str, tuple[str, ...]] | None:
        """The wire name of ``path`` and the template covering it, or None."""
        for template in templates:
            if len(template) != len(path):
                continue
            parts = []
            for t, segment in zip(template, path, strict=True):
                if t == _DICT_WILDCARD and isinstance(segment, str):
                    parts.append("{" + _escape_key(segment) + "}")
                elif t == _LIST_WILDCARD and isinstance(segment, int):
                    parts.append(f"[{segment}]")
                elif t == segment:
                    parts.append(segment)
                else:
                    break
            else:
                return ".".join(parts), template
        return None


def _torch_dtype(name: Any) -> torch.dtype | None:
    dtype = getattr(torch, str(name), None)
    return dtype if isinstance(dtype, torch.dtype) else None


# Parsed templates per OpenAPI document. Clients hand out the same dict for as
# long as a connection lasts, so its identity is the key; the entry holds the
# dict, which keeps the identity from being reused. A re-served Tesseract gets
# a new dict and so a new entry.
_TEMPLATE_CACHE: dict[int, tuple[dict, _Templates]] = {}
_TEMPLATE_CACHE_SIZE = 64


def _templates_of(schema: dict) -> _Templates:
    cached = _TEMPLATE_CACHE.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    parsed = _Templates(schema)
    if len(_TEMPLATE_CACHE) >= _TEMPLATE_CACHE_SIZE:
        _TEMPLATE_CACHE.pop(next(iter(_TEMPLATE_CACHE)))
    _TEMPLATE_CACHE[id(schema)] = (schema, parsed)
    return parsed


# ---------------------------------------------------------------------------
# Walking inputs and outputs


def _children(value: Any) -> list[tuple[Segment, Any]] | None:
    """A container's (segment, child) pairs; None for a leaf (arrays are leaves)."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return None


def _flatten(tree: dict, templates: _Templates) -> list[tuple[LeafPath, Any]]:
    """(path, leaf) pairs of a top-level dict, opening a container only where a
    template reaches below it; an empty container stays a leaf."""
    leaves: list[tuple[LeafPath, Any]] = []

    def visit(path: LeafPath, value: Any) -> None:
        children = _children(value)
        if children and templates.reaches_below(path):
            for segment, child in children:
                visit((*path, segment), child)
        else:
            leaves.append((path, value))

    for key, value in tree.items():
        visit((key,), value)
    return leaves


def _holds_array(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return True
    return any(_holds_array(child) for _, child in _children(value) or ())


def _open_array_containers(path: LeafPath, value: Any) -> list[tuple[LeafPath, Any]]:
    """A dict or list leaf that holds arrays, split into its leaves, so that
    every tensor reaches the autograd function (and torch.vmap sees it) and
    every NumPy array can be given a batch dimension; tuples and containers
    without arrays stay whole (tesseract-torch 0.2.0 does the same)."""
    if not isinstance(value, (dict, list)) or not _holds_array(value):
        return [(path, value)]
    return [item for key, child in _children(value) or () for item in _open_array_containers((*path, key), child)]


def _all_leaves(path: LeafPath, value: Any) -> list[tuple[LeafPath, Any]]:
    """Every leaf under ``value`` (arrays are leaves), for batching outputs."""
    children = _children(value)
    if not children:
        return [(path, value)]
    return [item for key, child in children for item in _all_leaves((*path, key), child)]


class _Level(dict):
    """A container level rebuilt by _unflatten (leaves that are dicts are not)."""


def _unflatten(leaves: Sequence[tuple[LeafPath, Any]]) -> dict:
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


# ---------------------------------------------------------------------------
# Tensors <-> arrays


def _require_storage(tensor: torch.Tensor) -> None:
    """torch.func wraps tensors in storage-less wrappers; say so clearly."""
    try:
        tensor.data_ptr()
    except RuntimeError:
        raise RuntimeError(_TORCH_FUNC_MESSAGE) from None


def _to_sendable(tensor: torch.Tensor, on_device: bool, dtype: torch.dtype | None) -> Any:
    """What the client receives for a tensor: a host NumPy array (sharing the
    tensor's memory when it is a CPU tensor), or, on a device transport, the
    contiguous CUDA tensor in the schema's dtype."""
    _require_storage(tensor)
    tensor = tensor.detach()
    # Lazy conjugate and negative views have no NumPy or wire form.
    if tensor.is_conj():
        tensor = tensor.resolve_conj()
    if tensor.is_neg():
        tensor = tensor.resolve_neg()
    if on_device and tensor.is_cuda:
        return (tensor if dtype is None else tensor.to(dtype)).contiguous()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    return tensor.numpy()


def _is_device_array(value: Any) -> bool:
    """A GPU array from a client: tesscpp's DLPack arrays on a CUDA device, or
    tesseract-core's IpcDeviceArray (which also has the CUDA array interface)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return False
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and device()[0] == _DLPACK_CUDA


def _as_tensor(value: Any) -> torch.Tensor:
    """A decoded output as a tensor: device arrays adopted through DLPack, NumPy
    arrays wrapped without a copy when writable (copied once otherwise)."""
    if isinstance(value, torch.Tensor):
        return value
    if _is_device_array(value):
        return torch.from_dlpack(value)
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    elif not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(array)


def _is_zero(tensor: torch.Tensor | None) -> bool:
    """A missing or all-zero (co)tangent; NaN counts as non-zero."""
    if tensor is None:
        return True
    _require_storage(tensor)
    return not bool(tensor.any())


# ---------------------------------------------------------------------------
# GPU transport


def _choose_transport(tesseract: Any, requested: str | None, has_cuda: bool) -> str:
    """The transport of one call: "none" (host copies) or a device transport.

    Calls without CUDA tensors never ask; an explicit argument wins; otherwise
    the Tesseract decides through resolve_gpu_transport (tesseract-core 1.15's
    rules: what it requests once known to work, else what the server offers and
    works, else "none").
    """
    if not has_cuda or requested == "none":
        return "none"
    in_process = tesseract.server_capabilities is None
    if requested is not None:
        if in_process:
            created = tesseract.resolve_gpu_transport()
            return requested if created == requested else "none"
        return _with_transport(tesseract, requested).resolve_gpu_transport()
    resolve = getattr(tesseract, "resolve_gpu_transport", None)
    resolved = resolve() if resolve is not None else "none"
    if resolved not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(
            f"The Tesseract requests gpu_transport={resolved!r}, which apply_tesseract "
            f"cannot drive (supported: {list(SUPPORTED_GPU_TRANSPORTS)}). Pass "
            "tesseract.with_encoding(gpu_transport='none') to copy CUDA tensors to "
            "the host instead."
        )
    return resolved


def _with_transport(tesseract: Any, transport: str) -> Any:
    """The Tesseract, or a view of it, whose calls use ``transport``.

    A view per call keeps one call's transport from leaking into others that
    share the Tesseract; in-process Tesseracts encode nothing and are used as
    they are.
    """
    if tesseract.server_capabilities is None:
        return tesseract
    if (tesseract.current_encoding.gpu_transport or "none") == transport:
        return tesseract
    return tesseract.with_encoding(gpu_transport=transport)


# ---------------------------------------------------------------------------
# Calls issued concurrently

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _concurrently(task: Callable[[int], T], count: int) -> list[T]:
    """task(0), ..., task(count - 1) in order, run on a shared thread pool (the
    clients release the GIL for the length of a call); the first error raises."""
    global _POOL
    if count <= 1:
        return [task(i) for i in range(count)]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_MAX_CONCURRENT_CALLS, thread_name_prefix="tesscpp-vmap")
    return [future.result() for future in [_POOL.submit(task, i) for i in range(count)]]


# Batched (co)tangents. torch.autograd.grad(is_grads_batched=True), which
# torch.autograd.functional.jacobian(vectorize=True) uses, hands backward() and
# jvp() tensors batched by torch's legacy vmap: they have no storage, and a
# custom Function called on them runs as a plain op. Their batch is read and
# restored with torch's own _remove_batch_dim/_add_batch_dim at the tensor's
# legacy vmap level (python/tests/test_vmap.py pins these hooks against the
# torch in use).


def _is_legacy_batched(tensor: torch.Tensor | None) -> bool:
    return tensor is not None and bool(torch._C._functorch.is_legacy_batchedtensor(tensor))


# Legacy vmap levels count from 1 per nesting; torch keeps no public way to
# read a tensor's. The level is found by trying: removing the right one
# leaves a plain tensor. (The vmap-mode counter cannot tell it: CUDA backward
# runs on the device's autograd thread, where that counter is 0.)
_MAX_LEGACY_LEVEL = 64


def _legacy_batch_level(tensor: torch.Tensor) -> int:
    for level in range(1, _MAX_LEGACY_LEVEL + 1):
        if not _is_legacy_batched(torch._remove_batch_dim(tensor, level, 1, 0)):
            return level
    raise NotImplementedError(
        "apply_tesseract takes (co)tangents batched once (torch.autograd.functional.jacobian(vectorize=True), "
        "autograd.grad(is_grads_batched=True)), not batched again inside another batch"
    )


def _unbatched(tensors: Sequence[torch.Tensor | None]) -> tuple[list[torch.Tensor | None], int, int]:
    """The (co)tangents with their legacy batch dimension made physical (dim 0),
    the unbatched ones as they are, the batch size and the batch's level."""
    level = next(_legacy_batch_level(t) for t in tensors if t is not None and _is_legacy_batched(t))
    out: list[torch.Tensor | None] = []
    size = 0
    for tensor in tensors:
        if tensor is not None and _is_legacy_batched(tensor):
            tensor = torch._remove_batch_dim(tensor, level, 1, 0)
            size = tensor.shape[0]
        out.append(tensor)
    return out, size, level


def _element(tensor: torch.Tensor | None, batched: bool, index: int) -> torch.Tensor | None:
    return tensor[index] if batched and tensor is not None else tensor


# ---------------------------------------------------------------------------
# The autograd function


@dataclass
class _Call:
    """One apply_tesseract call: what forward, backward, jvp and vmap share.

    The function's tensor arguments are the differentiable tensors (their
    paths, wire names and schema dtypes in ``slot_*``) followed by the other
    tensors among the inputs (paths in ``plain_paths``): torch.vmap batches
    both. ``static`` holds every other input leaf by path, ``order`` the order
    of all leaves.
    """

    tesseract: Any
    templates: _Templates
    transport: str
    vmap_method: str | None
    order: list[LeafPath]
    static: dict[LeafPath, Any]
    slot_paths: list[LeafPath]
    slot_wires: list[str]
    slot_dtypes: list[torch.dtype | None]
    plain_paths: list[LeafPath]
    sent: dict | None = None
    flat_result: list[tuple[LeafPath, Any]] = field(default_factory=list)
    output_paths: list[LeafPath] = field(default_factory=list)
    output_wires: list[str] = field(default_factory=list)

    @property
    def on_device(self) -> bool:
        return self.transport != "none"

    def fresh(self, **changes: Any) -> _Call:
        """The same call for another invocation (a batch element, a batched call)."""
        return replace(self, sent=None, flat_result=[], output_paths=[], output_wires=[], **changes)

    def client(self) -> Any:
        return _with_transport(self.tesseract, self.transport) if self.on_device else self.tesseract

    def payload(self, tensors: Sequence[torch.Tensor]) -> dict:
        """The inputs as sent: static leaves as given, tensors converted."""
        dtypes = [*self.slot_dtypes, *(None,) * len(self.plain_paths)]
        paths = [*self.slot_paths, *self.plain_paths]
        converted = {
            path: _to_sendable(tensor, self.on_device, dtype)
            for path, tensor, dtype in zip(paths, tensors, dtypes, strict=True)
        }
        return _unflatten([(path, converted[path] if path in converted else self.static[path]) for path in self.order])

    def sendable(self, wires: Sequence[str], tensors: Sequence[torch.Tensor | None]) -> dict[str, Any]:
        """Wire name -> array for the (co)tangents that are present and non-zero."""
        return {
            wire: _to_sendable(tensor, self.on_device, None)
            for wire, tensor in zip(wires, tensors, strict=True)
            if tensor is not None and not _is_zero(tensor)
        }

    def vjp(self, wanted: list[str], cotangents: Sequence[torch.Tensor | None]) -> dict:
        """The VJP at the sent inputs of the non-zero cotangents for the
        ``wanted`` inputs ({} if none)."""
        sent = self.sendable(self.output_wires, cotangents)
        if not sent or not wanted:
            return {}
        assert self.sent is not None
        return self.client().vector_jacobian_product(
            inputs=self.sent, vjp_inputs=wanted, vjp_outputs=list(sent), cotangent_vector=sent
        )

    def jvp(self, tangents: Sequence[torch.Tensor | None]) -> dict | None:
        """The JVP at the sent inputs of the non-zero tangents; None when every
        tangent is zero."""
        sent = self.sendable(self.slot_wires, tangents)
        if not sent:
            return None
        assert self.sent is not None
        return self.client().jacobian_vector_product(
            inputs=self.sent, jvp_inputs=list(sent), jvp_outputs=list(self.output_wires), tangent_vector=sent
        )

    def apply(self, tensors: Sequence[torch.Tensor]) -> None:
        """Runs apply and records its flat result and differentiable outputs."""
        self.sent = self.payload(tensors)
        self.record(self.client().apply(self.sent))

    def record(self, result: dict) -> None:
        self.flat_result = _flatten(result, self.templates)
        # Concrete keys of dict-valued outputs exist only now.
        outputs = []
        for path, _ in self.flat_result:
            wire = self.templates.output_wire(path)
            if wire is not None:
                outputs.append((path, wire))
        outputs.sort(key=lambda item: item[0])
        self.output_paths = [path for path, _ in outputs]
        self.output_wires = [wire for _, wire in outputs]

    def output_tensors(self) -> tuple[torch.Tensor, ...]:
        values = dict(self.flat_result)
        return tuple(_as_tensor(values[path]) for path in self.output_paths)


def _gradients(
    call: _Call, needs: Sequence[bool], saved: Sequence[torch.Tensor], cotangents: Sequence[torch.Tensor | None]
) -> list[torch.Tensor | None]:
    """One gradient per differentiable tensor from the call's VJP: None where
    autograd needs none, zeros where the VJP gave none (every cotangent zero,
    or the output unused: None would read as "not an input")."""
    wanted = [wire for wire, need in zip(call.slot_wires, needs, strict=True) if need]
    result = call.vjp(wanted, cotangents)
    grads: list[torch.Tensor | None] = []
    for wire, need, tensor in zip(call.slot_wires, needs, saved, strict=True):
        if not need:
            grads.append(None)
        elif wire in result:
            grads.append(_as_tensor(result[wire]).to(tensor.device))
        else:
            grads.append(torch.zeros_like(tensor))
    return grads


def _save_inputs(ctx: Any, call: _Call, tensors: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
    """What both autograd functions' setup_context do with their tensor
    arguments; returns the differentiable ones, which it saved for backward."""
    # torch.func hands forward() unwrapped tensors and only setup_context the
    # wrapped ones, so transforms are refused here.
    for tensor in tensors:
        _require_storage(tensor)
    # An output the loss does not use gets no cotangent rather than zeros.
    ctx.set_materialize_grads(False)
    # Saved tensors make autograd refuse a backward after an in-place edit of
    # an input, instead of linearising at the edited values; the arrays sent by
    # forward hold the values these tensors had then.
    diff = tensors[: len(call.slot_wires)]
    ctx.save_for_backward(*diff)
    return diff


class _TesseractFunction(torch.autograd.Function):
    @staticmethod
    def forward(call: _Call, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        call.apply(tensors)
        return call.output_tensors()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        call, *tensors = inputs
        ctx.save_for_forward(*_save_inputs(ctx, call, tensors))
        ctx.call = call
        # Not the outputs themselves: that would be a reference cycle.
        ctx.output_specs = [(o.shape, o.dtype, o.device) for o in output]

    @staticmethod
    def backward(ctx: Any, *cotangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        call: _Call = ctx.call
        saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[1 : 1 + len(call.slot_wires)]
        if any(_is_legacy_batched(c) for c in cotangents):
            grads = _batched_gradients(call, needs, saved, cotangents)
        else:
            grads = _gradients(call, needs, saved, cotangents)
        if torch.is_grad_enabled():
            # create_graph=True: keep the gradients usable but make any attempt
            # to differentiate them again fail loudly.
            depends_on = [*saved, *(c for c in cotangents if c is not None)]
            grads = [g if g is None else _FirstOrderOnly.apply(g, *depends_on) for g in grads]
        return (None, *grads, *(None,) * len(call.plain_paths))

    @staticmethod
    def jvp(ctx: Any, *tangents: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        call: _Call = ctx.call
        mine = tangents[1 : 1 + len(call.slot_wires)]
        if any(_is_legacy_batched(t) for t in mine):
            return _batched_output_tangents(call, ctx.output_specs, mine)
        result = call.jvp(mine)
        if result is None:
            return tuple(torch.zeros(shape, dtype=dtype, device=device) for shape, dtype, device in ctx.output_specs)
        return tuple(
            _as_tensor(result[wire]).to(device)
            for wire, (_, _, device) in zip(call.output_wires, ctx.output_specs, strict=True)
        )

    @staticmethod
    def vmap(info: Any, in_dims: tuple[int | None, ...], call: _Call, *tensors: torch.Tensor) -> Any:
        """Batching rule for torch.vmap, following the call's vmap_method.

        Every array output comes back batched along dim 0, the
        non-differentiable ones as tensors too (a NumPy array cannot carry the
        batch dimension); other outputs are returned once.
        """
        method = call.vmap_method
        if method is None:
            raise NotImplementedError(
                "torch.vmap over apply_tesseract needs a batching strategy. Pass "
                f"vmap_method (one of {list(VMAP_METHODS)}) to apply_tesseract."
            )
        size = info.batch_size
        dims = in_dims[1:]
        if method in ("sequential", "parallel") and size == 0:
            raise ValueError(
                f'vmap_method="{method}" cannot batch over an empty batch, since '
                "it takes the outputs from the per-element calls."
            )
        if method == "sequential":
            elements = [
                _call_leaves(call, [t if d is None else t.select(d, i) for t, d in zip(tensors, dims, strict=True)])
                for i in range(size)
            ]
            batched = {path: _stack_leaf(path, [leaves[path] for leaves in elements]) for path in elements[0]}
        elif method == "parallel":
            batched = _parallel_leaves(call, tensors, dims, size)
        else:
            moved = [
                _with_batch_dim(t, method, size) if d is None else t.movedim(d, 0)
                for t, d in zip(tensors, dims, strict=True)
            ]
            static = {path: _with_batch_dim(value, method, size) for path, value in call.static.items()}
            leaves = _call_leaves(call.fresh(static=static), moved)
            batched = {path: _expand_leaf(path, value, size, method) for path, value in leaves.items()}
        call.flat_result = list(batched.items())
        call.output_paths = [path for path, value in batched.items() if isinstance(value, torch.Tensor)]
        outputs = tuple(batched[path] for path in call.output_paths)
        return outputs, (0,) * len(outputs)


def _stack_gradients(per_element: Sequence[Sequence[torch.Tensor | None]], k: int) -> torch.Tensor:
    """Input k's gradients of every batch element (it needs one), stacked."""
    grads = [element[k] for element in per_element]
    assert all(g is not None for g in grads)
    return torch.stack(grads)  # type: ignore[arg-type]


def _batched_gradients(
    call: _Call, needs: Sequence[bool], saved: Sequence[torch.Tensor], cotangents: Sequence[torch.Tensor | None]
) -> list[torch.Tensor | None]:
    """Gradients for a batch of cotangents: one VJP per batch element, issued
    concurrently, the gradients batched again at the same level."""
    physical, size, level = _unbatched(cotangents)
    batched = [_is_legacy_batched(c) for c in cotangents]

    def element_grads(i: int) -> list[torch.Tensor | None]:
        return _gradients(call, needs, saved, [_element(c, b, i) for c, b in zip(physical, batched, strict=True)])

    per_element = _concurrently(element_grads, size)
    grads: list[torch.Tensor | None] = []
    for k, need in enumerate(needs):
        if not need:
            grads.append(None)
            continue
        stacked = _stack_gradients(per_element, k) if size else saved[k].new_zeros((0, *saved[k].shape))
        grads.append(torch._add_batch_dim(stacked, 0, level))
    return grads


def _stack_tangents(
    results: Sequence[dict | None], wires: Sequence[str], specs: Sequence[tuple[Any, torch.dtype, torch.device]]
) -> list[torch.Tensor]:
    """Per-element JVP answers stacked along a new dim 0, one tensor per output
    (shape, dtype and device of one element's in ``specs``); an element whose
    tangents were all zero (None) contributes zeros."""
    return [
        torch.stack(
            [
                torch.zeros(shape, dtype=dtype, device=device) if r is None else _as_tensor(r[wire]).to(device)
                for r in results
            ]
        )
        if results
        else torch.zeros((0, *shape), dtype=dtype, device=device)
        for wire, (shape, dtype, device) in zip(wires, specs, strict=True)
    ]


def _batched_output_tangents(
    call: _Call, specs: Sequence[tuple[Any, torch.dtype, torch.device]], tangents: Sequence[torch.Tensor | None]
) -> tuple[torch.Tensor, ...]:
    """Output tangents for a batch of input tangents: one JVP per batch
    element, issued concurrently, batched again at the same level."""
    physical, size, level = _unbatched(tangents)
    batched = [_is_legacy_batched(t) for t in tangents]

    def element_tangents(i: int) -> dict | None:
        return call.jvp([_element(t, b, i) for t, b in zip(physical, batched, strict=True)])

    results = _concurrently(element_tangents, size)
    return tuple(torch._add_batch_dim(t, 0, level) for t in _stack_tangents(results, call.output_wires, specs))


def _apply_function(function: type[torch.autograd.Function], *args: Any) -> Any:
    """``function.apply(*args)`` for a function whose forward has no default
    arguments. Function.apply binds defaults with inspect.signature on every
    call (about 40 µs, a third of the bridge's own time per call); with no
    defaults to bind, and outside functorch transforms, what remains of it is
    unwrapping dead functorch wrappers and the C++ apply."""
    if torch._C._are_functorch_transforms_active():
        return function.apply(*args)
    args = torch._functorch.utils.unwrap_dead_wrappers(args)
    return super(torch.autograd.Function, function).apply(*args)  # type: ignore[misc]


class _FirstOrderOnly(torch.autograd.Function):
    """Passes a gradient through; differentiating it raises."""

    @staticmethod
    def forward(ctx: Any, grad: torch.Tensor, *depends_on: torch.Tensor) -> torch.Tensor:
        return grad

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> None:
        raise RuntimeError(
            "apply_tesseract does not support higher-order derivatives: the "
            "Tesseract's vector_jacobian_product cannot itself be differentiated."
        )


# ---------------------------------------------------------------------------
# torch.vmap: the three methods of tesseract-torch 0.2.0


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) or _is_device_array(value)


def _leaves_of(call: _Call, outputs: Sequence[torch.Tensor]) -> dict[LeafPath, Any]:
    """Every output leaf of a finished call by path: the differentiable outputs
    as the function returned them, other arrays as tensors, the rest as is."""
    returned = dict(zip(call.output_paths, outputs, strict=True))
    leaves: dict[LeafPath, Any] = {}
    for path, value in call.flat_result:
        if path in returned:
            leaves[path] = returned[path]
            continue
        for leaf_path, leaf in _all_leaves(path, value):
            leaves[leaf_path] = _as_tensor(leaf) if _is_array(leaf) else leaf
    return leaves


def _call_leaves(call: _Call, tensors: Sequence[torch.Tensor]) -> dict[LeafPath, Any]:
    """Calls the Tesseract once (through the autograd function, so the outputs
    stay differentiable) and returns every output leaf by path."""
    inner = call.fresh()
    outputs = _TesseractFunction.apply(inner, *tensors)
    return _leaves_of(inner, outputs)


def _with_batch_dim(value: Any, method: str, size: int) -> Any:
    """An unbatched tensor or NumPy array with a leading dimension: of size 1
    ("expand_dims") or of the batch size ("broadcast_all"); others as they are."""
    if not isinstance(value, (torch.Tensor, np.ndarray)):
        return value
    value = value[None]
    if method == "broadcast_all":
        broadcast = torch.broadcast_to if isinstance(value, torch.Tensor) else np.broadcast_to
        value = broadcast(value, (size, *value.shape[1:]))
    return value


def _dotted(path: LeafPath) -> str:
    return ".".join(str(part) for part in path)


def _stack_leaf(path: LeafPath, values: list[Any]) -> Any:
    """One output leaf of the per-element calls, stacked along a new dim 0. A
    leaf that is not an array cannot carry the batch: element 0's value is
    returned, with a warning when another element's differs."""
    first = values[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(values)
    for index, value in enumerate(values[1:], start=1):
        try:
            differs = bool(value != first)
        except (TypeError, ValueError):
            differs = value is not first
        if differs:
            warnings.warn(
                f"Tesseract returned the non-array output {_dotted(path)!r} as {value!r} for batch "
                f"element {index}, but {first!r} for element 0. Non-array outputs "
                "cannot carry a batch dimension, so the value from element 0 is "
                "the one apply_tesseract returns and the others are ignored.",
                UserWarning,
                stacklevel=2,
            )
            break
    return first


def _expand_leaf(path: LeafPath, value: Any, size: int, method: str) -> Any:
    """An output leaf of a batched call, checked and broadcast to the batch:
    "expand_dims" accepts a leading 1 (an output no batched input reached),
    "broadcast_all" only the batch size."""
    if not isinstance(value, torch.Tensor):
        return value
    allowed = (size,) if method == "broadcast_all" else (size, 1)
    if value.ndim == 0 or value.shape[0] not in allowed:
        sizes = " or ".join(str(s) for s in dict.fromkeys(allowed))
        raise ValueError(
            f"vmap_method={method!r} needs every array output to have a "
            f"leading batch dimension of size {sizes}, but "
            f"{_dotted(path)!r} has shape {tuple(value.shape)}."
        )
    return value.expand(size, *value.shape[1:])


# ---------------------------------------------------------------------------
# torch.vmap: "parallel"


@dataclass
class _Batch:
    """A "parallel" batch: the call, which tensor arguments carry the batch
    (along dim 0), the batch size, and each element's call once made."""

    call: _Call
    batched: list[bool]
    size: int
    elements: list[_Call] = field(default_factory=list)
    leaves: dict[LeafPath, Any] = field(default_factory=dict)

    def element_tensors(self, tensors: Sequence[Any], index: int) -> list[Any]:
        return [_element(t, b, index) for t, b in zip(tensors, self.batched, strict=True)]

    def tensor_paths(self) -> list[LeafPath]:
        """The outputs the function returns: the differentiable ones first (in
        the element calls' order), then the other arrays."""
        first = self.elements[0].output_paths
        return [*first, *[p for p, v in self.leaves.items() if isinstance(v, torch.Tensor) and p not in first]]


class _ParallelFunction(torch.autograd.Function):
    """A whole "parallel" batch as one autograd node: apply, VJP and JVP are
    each one call per batch element, issued concurrently."""

    @staticmethod
    def forward(batch: _Batch, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch.elements = [batch.call.fresh() for _ in range(batch.size)]

        def run(i: int) -> None:
            batch.elements[i].apply(batch.element_tensors(tensors, i))

        _concurrently(run, batch.size)
        per_element = [_leaves_of(e, e.output_tensors()) for e in batch.elements]
        batch.leaves = {path: _stack_leaf(path, [leaves[path] for leaves in per_element]) for path in per_element[0]}
        return tuple(batch.leaves[p] for p in batch.tensor_paths())

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        batch, *tensors = inputs
        _save_inputs(ctx, batch.call, tensors)
        ctx.batch = batch
        n_diff = len(batch.elements[0].output_paths)
        ctx.mark_non_differentiable(*output[n_diff:])
        ctx.output_specs = [(o.shape, o.dtype, o.device) for o in output[:n_diff]]
        ctx.n_other = len(output) - n_diff

    @staticmethod
    def backward(ctx: Any, *cotangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        batch: _Batch = ctx.batch
        saved = ctx.saved_tensors
        call = batch.call
        needs = ctx.needs_input_grad[1 : 1 + len(call.slot_wires)]
        mine = cotangents[: len(batch.elements[0].output_paths)]
        if any(_is_legacy_batched(c) for c in mine):
            raise NotImplementedError(
                'vmap_method="parallel" cannot take batched cotangents; use vmap_method="sequential"'
            )

        def element_grads(i: int) -> list[torch.Tensor | None]:
            slices = [t[i] if b else t for t, b in zip(saved, batch.batched, strict=False)]
            return _gradients(batch.elements[i], needs, slices, [None if c is None else c[i] for c in mine])

        per_element = _concurrently(element_grads, batch.size)
        grads: list[torch.Tensor | None] = []
        for k, need in enumerate(needs):
            if not need:
                grads.append(None)
            elif batch.batched[k]:
                grads.append(_stack_gradients(per_element, k))
            else:  # one tensor used by every element: its gradients add up
                grads.append(_stack_gradients(per_element, k).sum(0))
        return (None, *grads, *(None,) * len(call.plain_paths))

    @staticmethod
    def jvp(ctx: Any, *tangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        batch: _Batch = ctx.batch
        mine = tangents[1 : 1 + len(batch.call.slot_wires)]

        def element_tangents(i: int) -> dict | None:
            return batch.elements[i].jvp([_element(t, b, i) for t, b in zip(mine, batch.batched, strict=False)])

        results = _concurrently(element_tangents, batch.size)
        element_specs = [(shape[1:], dtype, device) for shape, dtype, device in ctx.output_specs]
        outputs: list[torch.Tensor | None] = [*_stack_tangents(results, batch.elements[0].output_wires, element_specs)]
        # One entry per output; the non-differentiable ones take None.
        outputs += [None] * ctx.n_other
        return tuple(outputs)


def _parallel_leaves(
    call: _Call, tensors: Sequence[torch.Tensor], dims: Sequence[int | None], size: int
) -> dict[LeafPath, Any]:
    batch = _Batch(call, [d is not None for d in dims], size)
    moved = [t if d is None else t.movedim(d, 0) for t, d in zip(tensors, dims, strict=True)]
    outputs = _ParallelFunction.apply(batch, *moved)
    by_path = dict(zip(batch.tensor_paths(), outputs, strict=True))
    return {path: by_path.get(path, value) for path, value in batch.leaves.items()}


# ---------------------------------------------------------------------------
# Public API


# torch.compile: the call leaves the process (or runs foreign C++), so there is
# nothing for dynamo to trace. Without this, dynamo steps into the client and
# calls its nanobind methods without their object (a TypeError on every
# compiled call); disabled, the compiled function breaks its graph here and the
# call runs eagerly, with its autograd node, as outside torch.compile.
@torch.compiler.disable
def apply_tesseract(
    tesseract: Any,
    inputs: dict[str, Any],
    *,
    gpu_transport: str | None = None,
    vmap_method: str | None = None,
) -> dict[str, Any]:
    """Call ``tesseract``'s apply as a differentiable PyTorch operation.

    Args:
        tesseract: a ``tesscpp.Tesseract`` (any constructor, or a with_encoding
            view) or a ``tesseract_core.Tesseract``, ready to be called.
        inputs: nested dict matching its input schema. Tensors for fields the
            schema marks differentiable take part in autograd (reverse mode via
            the VJP endpoint, forward mode via the JVP endpoint); everything
            else is sent as it is (other tensors as host arrays).
        gpu_transport: how CUDA tensors reach the Tesseract: None asks it
            (``resolve_gpu_transport``), "none" copies them through the host,
            "cuda_ipc" passes them by reference where the client can.
        vmap_method: how the call is batched under ``torch.vmap``. None raises
            when a batched tensor reaches the call. "sequential" calls the
            Tesseract once per batch element (any schema); "parallel" issues
            those calls, and their VJPs and JVPs, concurrently (spreading a
            batch over a server's workers or replicas); "expand_dims" gives
            every unbatched array input a leading dimension of size 1 and calls
            once (the schema must accept the extra dimension and broadcast 1
            against the batch); "broadcast_all" broadcasts unbatched inputs to
            the batch size instead. Under torch.vmap array outputs that are not
            differentiable come back as tensors; a non-array output is returned
            once (element 0's under the per-element methods, with a warning if
            another element's differs).

    Returns:
        The outputs, shaped like the output schema: differentiable arrays as
        tensors (on the CPU when they came through the host), everything else
        as the client decoded it.
    """
    if gpu_transport is not None and gpu_transport not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(f"Unsupported gpu_transport {gpu_transport!r}; supported: {list(SUPPORTED_GPU_TRANSPORTS)}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"Unsupported vmap_method {vmap_method!r}; supported: {list(VMAP_METHODS)}.")
    if not isinstance(inputs, dict):
        raise TypeError(f"apply_tesseract takes the inputs as a dict, not {type(inputs).__name__}")

    templates = _templates_of(tesseract.openapi_schema)
    order: list[LeafPath] = []
    static: dict[LeafPath, Any] = {}
    slot_paths: list[LeafPath] = []
    slot_wires: list[str] = []
    slot_dtypes: list[torch.dtype | None] = []
    slot_tensors: list[torch.Tensor] = []
    plain_paths: list[LeafPath] = []
    plain_tensors: list[torch.Tensor] = []
    for flat_path, flat_value in _flatten(inputs, templates):
        for path, value in _open_array_containers(flat_path, flat_value):
            order.append(path)
            if not isinstance(value, torch.Tensor):
                static[path] = value
                continue
            slot = templates.input_slot(path)
            if slot is None:
                plain_paths.append(path)
                plain_tensors.append(value.detach())
            else:
                slot_paths.append(path)
                slot_wires.append(slot[0])
                slot_dtypes.append(slot[1])
                slot_tensors.append(value)

    has_cuda = any(t.is_cuda for t in [*slot_tensors, *plain_tensors])
    call = _Call(
        tesseract=tesseract,
        templates=templates,
        transport=_choose_transport(tesseract, gpu_transport, has_cuda),
        vmap_method=vmap_method,
        order=order,
        static=static,
        slot_paths=slot_paths,
        slot_wires=slot_wires,
        slot_dtypes=slot_dtypes,
        plain_paths=plain_paths,
    )
    output_tensors = _apply_function(_TesseractFunction, call, *slot_tensors, *plain_tensors)
    by_path = dict(zip(call.output_paths, output_tensors, strict=True))
    return _unflatten(
        [(path, by_path[path] if path in by_path else _adopt_device_arrays(value)) for path, value in call.flat_result]
    )


def _adopt_device_arrays(value: Any) -> Any:
    """Device arrays in non-differentiable outputs become CUDA tensors (no copy)."""
    if _is_device_array(value):
        return torch.from_dlpack(value)
    if isinstance(value, dict):
        return {key: _adopt_device_arrays(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_adopt_device_arrays(child) for child in value]
    return value
