"""What one use of the primitive asks of the Tesseract: the endpoint, the
request body (static leaves in place, ``None`` where the primitive's arrays
go), which of the primitive's arguments go where, and where each result is
in the answer. Built at trace time; sent by the custom call (``_lowering``)
or from Python (``send``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ._paths import Segment, Template, leaf_paths, name


@dataclass(eq=False)
class Spec:
    """A call site: the Tesseract, its schema's differentiable templates and
    the structure of the inputs and outputs. Compared by identity, so it can
    be a primitive parameter."""

    tesseract: Any
    endpoints: tuple[str, ...]
    in_templates: dict[Template, Any]  # parsed differentiable templates (_paths.templates)
    out_templates: dict[Template, Any]
    in_tree: Any
    static: tuple[Any, ...]  # per flat input leaf: its value, or None for an array argument
    is_static: tuple[bool, ...]
    out_tree: Any
    out_paths: tuple[tuple[Segment, ...], ...]
    vmap_method: str | None
    materialize_jacobian: bool | None
    gpu_transport: str | None  # for arrays on a CUDA device: None (the Tesseract decides), "none", "cuda_ipc"
    in_paths: tuple[tuple[Segment, ...], ...] = field(init=False)
    # Names the call site for forward reuse (docs/forward-reuse.md): its
    # differentiated apply keeps its forward, its derivative calls refer to it.
    site: int = field(init=False, default_factory=itertools.count().__next__)

    def __post_init__(self) -> None:
        self.in_paths = tuple(leaf_paths(jax.tree.unflatten(self.in_tree, list(range(len(self.is_static))))))

    @property
    def primal_paths(self) -> list[tuple[Segment, ...]]:
        """The paths of the array arguments, in argument order."""
        return [p for p, s in zip(self.in_paths, self.is_static, strict=True) if not s]

    def input_name(self, path: tuple[Segment, ...]) -> tuple[str, bool]:
        wire, template = name(path, self.in_templates)
        return wire, template is not None

    def output_name(self, path: tuple[Segment, ...]) -> tuple[str, bool]:
        wire, template = name(path, self.out_templates)
        return wire, template is not None


@dataclass
class Request:
    endpoint: str
    body: dict[str, Any]
    take: list[int]  # the primitive's arguments that are sent, in order
    arguments: list[tuple[Segment, ...]]  # where each goes in the body
    results: list[tuple[Segment, ...] | None]  # where each result is in the answer; None: NaN
    avals: list[Any]  # each result's shape and dtype


def _sendable(value: Any) -> Any:
    return np.asarray(value) if isinstance(value, jax.Array) else value


def _inputs(spec: Spec) -> Any:
    leaves = [_sendable(v) if s else None for v, s in zip(spec.static, spec.is_static, strict=True)]
    return jax.tree.unflatten(spec.in_tree, leaves)


def build(spec: Spec, kind: str, has_tangent: tuple[bool, ...], avals: tuple[Any, ...], jac: Any) -> Request:
    """The request of primitive use `kind` (apply, jvp, vjp, jacobian, hvp)."""
    primals = spec.primal_paths
    n = len(primals)
    body: dict[str, Any] = {"inputs": _inputs(spec)}
    take = list(range(n))
    arguments = [("inputs", *p) for p in primals]
    if kind == "apply":
        return Request("apply", body, take, arguments, [tuple(p) for p in spec.out_paths], list(avals))
    if kind == "jacobian":
        ins, outs, _ = jac
        body.update(jac_inputs=list(ins), jac_outputs=list(outs))
        return Request("jacobian", body, take, arguments, [(o, i) for o in outs for i in ins], list(avals))
    names = [spec.input_name(p) for p in primals]
    if kind == "jvp":
        outs = [spec.output_name(p) for p in spec.out_paths]
        tangents = [i for i in range(n) if has_tangent[i] and names[i][1]]
        body.update(
            jvp_inputs=[names[i][0] for i in tangents],
            jvp_outputs=[name for name, diff in outs if diff],
            tangent_vector={names[i][0]: None for i in tangents},
        )
        take += [n + i for i in tangents]
        arguments += [("tangent_vector", names[i][0]) for i in tangents]
        results: list[tuple[Segment, ...] | None] = [(name,) if diff else None for name, diff in outs]
        return Request("jacobian_vector_product", body, take, arguments, results, list(avals))
    if kind == "hvp":
        return _hvp_request(spec, has_tangent, avals, body, take, arguments)
    # vjp: the arguments after the primals are one cotangent per output, zero
    # (not sent) where JAX has none.
    outs = [spec.output_name(p) for p in spec.out_paths]
    cotangents = [j for j, (_, diff) in enumerate(outs) if diff and has_tangent[n + j]]
    wanted = [i for i in range(n) if has_tangent[i]]
    body.update(
        vjp_inputs=[names[i][0] for i in wanted],
        vjp_outputs=[outs[j][0] for j in cotangents],
        cotangent_vector={outs[j][0]: None for j in cotangents},
    )
    take += [n + j for j in cotangents]
    arguments += [("cotangent_vector", outs[j][0]) for j in cotangents]
    gradients: list[tuple[Segment, ...] | None] = [(names[i][0],) if has_tangent[i] else None for i in range(n)]
    return Request("vector_jacobian_product", body, take, arguments, gradients, list(avals))


def _hvp_request(
    spec: Spec, has_tangent: tuple[bool, ...], avals: tuple[Any, ...], body: dict, take: list, arguments: list
) -> Request:
    """hvp: the arguments after the primals are one cotangent per output (as
    vjp's) and one tangent per primal. `has_tangent`: the gradients wanted (per
    primal), the cotangents given (per output), the tangents given (per
    primal). The set differentiated is the wanted inputs and those moved; a
    wanted input that does not move gets a zero tangent (docs/derivatives.md §1)."""
    primals = spec.primal_paths
    n = len(primals)
    names = [spec.input_name(p) for p in primals]
    outs = [spec.output_name(p) for p in spec.out_paths]
    m = len(outs)
    cotangents = [j for j, (_, diff) in enumerate(outs) if diff and has_tangent[n + j]]
    moved = [i for i in range(n) if has_tangent[n + m + i] and names[i][1]]
    differentiated = [i for i in range(n) if has_tangent[i] or i in moved]
    body.update(
        hvp_inputs=[names[i][0] for i in differentiated],
        hvp_outputs=[outs[j][0] for j in cotangents],
        tangent_vector={
            names[i][0]: None if i in moved else np.zeros(avals[i].shape, avals[i].dtype) for i in differentiated
        },
        cotangent_vector={outs[j][0]: None for j in cotangents},
    )
    take += [n + j for j in cotangents] + [n + m + i for i in moved]
    arguments += [("cotangent_vector", outs[j][0]) for j in cotangents]
    arguments += [("tangent_vector", names[i][0]) for i in moved]
    results: list[tuple[Segment, ...] | None] = [(names[i][0],) if has_tangent[i] else None for i in range(n)]
    return Request("hessian_vector_product", body, take, arguments, results, list(avals))


def _mutable(tree: Any) -> Any:
    """A copy whose dicts and lists (tuples too, which JAX flattens alike) can
    take the arrays; leaves are shared."""
    if isinstance(tree, dict):
        return {k: _mutable(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_mutable(v) for v in tree]
    return tree


def _place(tree: Any, path: tuple[Segment, ...], value: Any) -> None:
    for segment in path[:-1]:
        tree = tree[segment]
    tree[path[-1]] = value


def _find(tree: Any, path: tuple[Segment, ...]) -> Any:
    for segment in path:
        tree = tree[segment]
    return tree


def _on_cuda(value: Any) -> bool:
    return hasattr(value, "__dlpack_device__") and value.__dlpack_device__()[0] == 2  # kDLCUDA


def send(tesseract: Any, request: Request, arrays: list[Any], on_device: bool = False, reuse: Any = None) -> list[Any]:
    """The request made with `arrays` (the sent arguments, in order) through
    the Tesseract object's own methods; the results as NumPy arrays. With
    `on_device` the arrays are CUDA jax Arrays sent as they are (a tesscpp
    Tesseract takes them through DLPack) and the results jax Arrays, taken
    from the answer's CUDA arrays through DLPack where it has them. `reuse`:
    a tesscpp.ForwardReuse the call takes part in (tesscpp Tesseracts only)."""
    body = _mutable(request.body)
    for path, array in zip(request.arguments, arrays, strict=True):
        _place(body, path, array if on_device else np.asarray(array))
    inputs = body.pop("inputs")
    method = getattr(tesseract, request.endpoint)
    # As tesseract-jax calls them: apply and abstract_eval with the inputs by
    # position, the derivatives with every argument by keyword (an object whose
    # derivative methods take keywords only works with both).
    extra = {} if reuse is None else {"reuse": reuse}
    if request.endpoint in ("apply", "abstract_eval"):
        answer = method(inputs, **extra)
    else:
        answer = method(inputs=inputs, **body, **extra)
    out = []
    for place, aval in zip(request.results, request.avals, strict=True):
        value = np.full(aval.shape, np.nan, dtype=aval.dtype) if place is None else _find(answer, place)
        if on_device:
            value = jax.numpy.from_dlpack(value) if _on_cuda(value) else value
            out.append(jax.numpy.asarray(value, dtype=aval.dtype).reshape(aval.shape))
        else:
            out.append(np.asarray(value, dtype=aval.dtype).reshape(aval.shape))
    return out
