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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = ["apply_tesseract"]

# DLPack's device type of CUDA memory (kDLCUDA).
_DLPACK_CUDA = 2

# Values of apply_tesseract's gpu_transport this bridge can drive.
SUPPORTED_GPU_TRANSPORTS = ("none", "cuda_ipc")

Segment = str | int
LeafPath = tuple[Segment, ...]

_DICT_WILDCARD = "{}"
_LIST_WILDCARD = "[]"

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

    def reaches_below(self, path: LeafPath) -> bool:
        """Whether a template is longer than ``path`` and matches it so far."""
        depth = len(path)
        return any(
            len(t) > depth and all(map(_segment_matches, t, path)) for t in self._both
        )

    @staticmethod
    def wire_name(path: LeafPath, templates: list[tuple[str, ...]]) -> str | None:
        """The gradient endpoints' name for ``path``, or None if no template covers it."""
        match = _Templates.match(path, templates)
        return None if match is None else match[0]

    def input_slot(self, path: LeafPath) -> tuple[str, torch.dtype | None] | None:
        """Wire name and declared dtype of a differentiable input leaf, or None."""
        match = _Templates.match(path, self.inputs)
        return None if match is None else (match[0], self.input_dtypes[match[1]])

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


class _Level(dict):
    """A container level rebuilt by _unflatten (leaves that are dicts are not)."""


def _unflatten(leaves: Sequence[tuple[LeafPath, Any]]) -> dict:
    """The nested dict back from (path, leaf) pairs; levels keyed by list
    positions become lists again (so tuples arrive as lists)."""
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


def _without_tensors(value: Any) -> Any:
    """A static value with any tensors inside containers turned into host arrays
    (a tensor the bridge sees as a leaf is converted by the call instead)."""
    if isinstance(value, torch.Tensor):
        return _to_sendable(value, False, None)
    if isinstance(value, dict):
        return {key: _without_tensors(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_tensors(child) for child in value]
    return value


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
# The autograd function


@dataclass
class _Call:
    """One apply_tesseract call: what forward, backward and jvp share.

    ``static`` holds every input leaf that is not a differentiable tensor, by
    position in ``order``; ``slots`` the paths, wire names and schema dtypes of
    the differentiable tensors, in the order they are passed to the function.
    """

    tesseract: Any
    templates: _Templates
    transport: str
    order: list[LeafPath]
    static: dict[LeafPath, Any]
    slot_paths: list[LeafPath]
    slot_wires: list[str]
    slot_dtypes: list[torch.dtype | None]
    sent: dict | None = None
    flat_result: list[tuple[LeafPath, Any]] = field(default_factory=list)
    output_paths: list[LeafPath] = field(default_factory=list)
    output_wires: list[str] = field(default_factory=list)

    @property
    def on_device(self) -> bool:
        return self.transport != "none"

    def client(self) -> Any:
        return _with_transport(self.tesseract, self.transport) if self.on_device else self.tesseract

    def saved_payload(self, saved: Sequence[torch.Tensor]) -> dict:
        """The forward call's inputs again, for backward and jvp.

        ``saved`` must come from ctx.saved_tensors, which refuses tensors
        edited in place since forward; so the arrays made from them for the
        forward call still hold the forward-time values and are sent again.
        """
        assert len(saved) == len(self.slot_paths) and self.sent is not None
        return self.sent

    def payload(self, tensors: Sequence[torch.Tensor]) -> dict:
        """The inputs as sent: static leaves as given, tensors converted."""
        converted = {
            path: _to_sendable(tensor, self.on_device, dtype)
            for path, tensor, dtype in zip(self.slot_paths, tensors, self.slot_dtypes, strict=True)
        }
        return _unflatten(
            [(path, converted[path] if path in converted else self.static[path]) for path in self.order]
        )

    def sendable(self, wires: Sequence[str], tensors: Sequence[torch.Tensor | None]) -> dict[str, Any]:
        """Wire name -> array for the (co)tangents that are present and non-zero."""
        return {
            wire: _to_sendable(tensor, self.on_device, None)
            for wire, tensor in zip(wires, tensors, strict=True)
            if tensor is not None and not _is_zero(tensor)
        }


class _TesseractFunction(torch.autograd.Function):
    @staticmethod
    def forward(call: _Call, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        call.sent = call.payload(tensors)
        result = call.client().apply(call.sent)
        call.flat_result = _flatten(result, call.templates)
        # Concrete keys of dict-valued outputs exist only now.
        outputs = []
        for path, _ in call.flat_result:
            wire = _Templates.wire_name(path, call.templates.outputs)
            if wire is not None:
                outputs.append((path, wire))
        outputs.sort(key=lambda item: item[0])
        call.output_paths = [path for path, _ in outputs]
        call.output_wires = [wire for _, wire in outputs]
        values = dict(call.flat_result)
        return tuple(_as_tensor(values[path]) for path in call.output_paths)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        call, *tensors = inputs
        # torch.func hands forward() unwrapped tensors and only this method the
        # wrapped ones, so transforms are refused here.
        for tensor in tensors:
            _require_storage(tensor)
        # An output the loss does not use gets no cotangent rather than zeros.
        ctx.set_materialize_grads(False)
        # Saved tensors make autograd refuse a backward after an in-place edit
        # of an input, instead of linearising at the edited values.
        ctx.save_for_backward(*tensors)
        ctx.save_for_forward(*tensors)
        ctx.call = call
        # Not the outputs themselves: that would be a reference cycle.
        ctx.output_specs = [(o.shape, o.dtype, o.device) for o in output]

    @staticmethod
    def backward(ctx: Any, *cotangents: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        call: _Call = ctx.call
        saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[1:]
        sent = call.sendable(call.output_wires, cotangents)
        wanted = [wire for wire, need in zip(call.slot_wires, needs, strict=True) if need]
        vjp = {}
        if sent and wanted:
            vjp = call.client().vector_jacobian_product(
                inputs=call.saved_payload(saved),
                vjp_inputs=wanted,
                vjp_outputs=list(sent),
                cotangent_vector=sent,
            )
        grads: list[torch.Tensor | None] = []
        for wire, need, tensor in zip(call.slot_wires, needs, saved, strict=True):
            if not need:
                grads.append(None)
            elif wire in vjp:
                grads.append(_as_tensor(vjp[wire]).to(tensor.device))
            else:
                # Every cotangent was zero (or the output unused): the gradient
                # is zero, and None would read as "not an input" to autograd.
                grads.append(torch.zeros_like(tensor))
        if torch.is_grad_enabled():
            # create_graph=True: keep the gradients usable but make any attempt
            # to differentiate them again fail loudly.
            depends_on = [*saved, *(c for c in cotangents if c is not None)]
            grads = [g if g is None else _FirstOrderOnly.apply(g, *depends_on) for g in grads]
        return (None, *grads)

    @staticmethod
    def jvp(ctx: Any, *tangents: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        call: _Call = ctx.call
        sent = call.sendable(call.slot_wires, tangents[1:])
        if not sent:
            return tuple(torch.zeros(shape, dtype=dtype, device=device) for shape, dtype, device in ctx.output_specs)
        jvp = call.client().jacobian_vector_product(
            inputs=call.saved_payload(ctx.saved_tensors),
            jvp_inputs=list(sent),
            jvp_outputs=list(call.output_wires),
            tangent_vector=sent,
        )
        return tuple(
            _as_tensor(jvp[wire]).to(device)
            for wire, (_, _, device) in zip(call.output_wires, ctx.output_specs, strict=True)
        )

    @staticmethod
    def vmap(info: Any, in_dims: Any, call: _Call, *tensors: torch.Tensor) -> Any:
        raise NotImplementedError(
            "torch.vmap over apply_tesseract is not supported: a Tesseract has no "
            "batching rule. Call apply_tesseract once per batch element, or batch "
            "inside the Tesseract."
        )


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
# Public API


# torch.compile: the call leaves the process (or runs foreign C++), so there is
# nothing for dynamo to trace. Without this, dynamo steps into the client and
# calls its nanobind methods without their object (a TypeError on every
# compiled call); disabled, the compiled function breaks its graph here and the
# call runs eagerly, with its autograd node, as outside torch.compile.
@torch.compiler.disable
def apply_tesseract(tesseract: Any, inputs: dict[str, Any], *, gpu_transport: str | None = None) -> dict[str, Any]:
    """Call ``tesseract``'s apply as a differentiable PyTorch operation.

    Args:
        tesseract: a ``tesscpp.Tesseract`` (any constructor, or a with_encoding
            view) or a ``tesseract_core.Tesseract``, ready to be called.
        inputs: nested dict matching its input schema. Tensors for fields the
            schema marks differentiable take part in autograd (reverse mode via
            the VJP endpoint, forward mode via the JVP endpoint); everything
            else is sent as it is (tensors elsewhere as host arrays).
        gpu_transport: how CUDA tensors reach the Tesseract: None asks it
            (``resolve_gpu_transport``), "none" copies them through the host,
            "cuda_ipc" passes them by reference where the client can.

    Returns:
        The outputs, shaped like the output schema: differentiable arrays as
        tensors (on the CPU when they came through the host), everything else
        as the client decoded it.
    """
    if gpu_transport is not None and gpu_transport not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(
            f"Unsupported gpu_transport {gpu_transport!r}; supported: {list(SUPPORTED_GPU_TRANSPORTS)}"
        )
    if not isinstance(inputs, dict):
        raise TypeError(f"apply_tesseract takes the inputs as a dict, not {type(inputs).__name__}")

    templates = _templates_of(tesseract.openapi_schema)
    order: list[LeafPath] = []
    static: dict[LeafPath, Any] = {}
    slot_paths: list[LeafPath] = []
    slot_wires: list[str] = []
    slot_dtypes: list[torch.dtype | None] = []
    slot_tensors: list[torch.Tensor] = []
    has_cuda = False
    for path, value in _flatten(inputs, templates):
        order.append(path)
        if isinstance(value, torch.Tensor):
            has_cuda = has_cuda or value.is_cuda
            slot = templates.input_slot(path)
            if slot is not None:
                slot_paths.append(path)
                slot_wires.append(slot[0])
                slot_dtypes.append(slot[1])
                slot_tensors.append(value)
                continue
        static[path] = value

    transport = _choose_transport(tesseract, gpu_transport, has_cuda)
    on_device = transport != "none"
    for path, value in static.items():
        if isinstance(value, torch.Tensor):
            static[path] = _to_sendable(value, on_device, None)
        elif isinstance(value, (dict, list, tuple)):
            static[path] = _without_tensors(value)
    call = _Call(
        tesseract=tesseract,
        templates=templates,
        transport=transport,
        order=order,
        static=static,
        slot_paths=slot_paths,
        slot_wires=slot_wires,
        slot_dtypes=slot_dtypes,
    )
    output_tensors = _TesseractFunction.apply(call, *slot_tensors)
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
