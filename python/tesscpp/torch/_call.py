"""One apply_tesseract call: what forward, backward, jvp and vmap share."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .._endpoint_calls import EndpointCalls, ForwardReuse
from .._transport import with_transport
from ._arrays import as_tensor, is_zero, to_sendable
from ._paths import LeafPath, Templates
from ._tree import flatten_outputs, unflatten

_NO_HVP = (
    "apply_tesseract does not support higher-order derivatives of this Tesseract: its "
    "vector_jacobian_product can be differentiated only through a hessian_vector_product "
    "endpoint (tesscpp's, docs/derivatives.md), which it lacks."
)


@dataclass
class Call:
    """The inputs as one flat (path, leaf) list, in the order the client sends
    them, and the autograd function's tensor arguments as positions in it.

    The function's tensor arguments are the differentiable tensors (wire names
    in ``slot_wires``) followed by the other tensors among the inputs:
    torch.vmap batches both. ``tensor_at`` holds each one's position in
    ``leaves`` (where its value is None: the tensor comes as an argument) and
    ``tensor_dtypes`` the dtype a device transport sends it in (the schema's
    for differentiable ones).
    """

    tesseract: Any
    templates: Templates
    transport: str
    vmap_method: str | None
    leaves: list[tuple[LeafPath, Any]]
    tensor_at: list[int]
    tensor_dtypes: list[torch.dtype | None]
    slot_wires: list[str]
    sent: dict | None = None
    # Forward reuse (docs/forward-reuse.md): whether a backward may follow
    # (the apply then asks to keep its forward), and what it kept.
    keep: bool = False
    residuals: str = ""
    release: weakref.finalize | None = None  # frees `residuals` on the server, once
    flat_result: list[tuple[LeafPath, Any]] = field(default_factory=list)
    output_paths: list[LeafPath] = field(default_factory=list)
    output_wires: list[str] = field(default_factory=list)

    @property
    def on_device(self) -> bool:
        return self.transport != "none"

    @property
    def plain_count(self) -> int:
        """Tensor arguments that are not differentiable inputs."""
        return len(self.tensor_at) - len(self.slot_wires)

    def fresh(self, **changes: Any) -> Call:
        """The same call for another invocation (a batch element, a batched call)."""
        return replace(
            self, sent=None, residuals="", release=None, flat_result=[], output_paths=[], output_wires=[], **changes
        )

    def client(self) -> Any:
        return with_transport(self.tesseract, self.transport) if self.on_device else self.tesseract

    def payload(self, tensors: Sequence[torch.Tensor]) -> dict:
        """The inputs as sent: other leaves as given, tensors converted."""
        values = [value for _, value in self.leaves]
        for position, tensor, dtype in zip(self.tensor_at, tensors, self.tensor_dtypes, strict=True):
            values[position] = to_sendable(tensor, self.on_device, dtype)
        return unflatten([(path, value) for (path, _), value in zip(self.leaves, values, strict=True)])

    def sendable(self, wires: Sequence[str], tensors: Sequence[torch.Tensor | None]) -> dict[str, Any]:
        """Wire name -> array for the (co)tangents that are present and non-zero."""
        return {
            wire: to_sendable(tensor, self.on_device, None)
            for wire, tensor in zip(wires, tensors, strict=True)
            if tensor is not None and not is_zero(tensor)
        }

    def referring(self) -> dict[str, Any]:
        """The keyword arguments of a derivative call: refers to what the apply
        kept, where it kept something."""
        return {"reuse": ForwardReuse(residuals=self.residuals)} if self.residuals else {}

    def vjp(self, wanted: list[str], cotangents: Sequence[torch.Tensor | None]) -> dict:
        """The VJP at the sent inputs of the non-zero cotangents for the
        ``wanted`` inputs ({} if none)."""
        sent = self.sendable(self.output_wires, cotangents)
        if not sent or not wanted:
            return {}
        assert self.sent is not None
        reuse = self.referring()
        if self.release is not None:
            # The VJP frees what it refers to once it has run, on the worker
            # that holds it, not once this call is collected: a training loop
            # lets go of a step's outputs only as its next apply returns (the
            # server held two steps' forward), and a release sent with some
            # later call reached whichever worker that call went to. A second
            # backward (retain_graph) is recomputed by the server.
            reuse["reuse"].release = [self.residuals]
        products = self.client().vector_jacobian_product(
            inputs=self.sent, vjp_inputs=wanted, vjp_outputs=list(sent), cotangent_vector=sent, **reuse
        )
        if self.release is not None:  # freed by that call: not again when this one goes
            self.release.detach()
            self.release, self.residuals = None, ""
        return products

    def jvp(self, tangents: Sequence[torch.Tensor | None]) -> dict | None:
        """The JVP at the sent inputs of the non-zero tangents; None when every
        tangent is zero."""
        sent = self.sendable(self.slot_wires, tangents)
        if not sent:
            return None
        assert self.sent is not None
        return self.client().jacobian_vector_product(
            inputs=self.sent,
            jvp_inputs=list(sent),
            jvp_outputs=list(self.output_wires),
            tangent_vector=sent,
            **self.referring(),
        )

    def hvp(
        self,
        wanted: list[str],
        tangents: Sequence[torch.Tensor | None],
        saved: Sequence[torch.Tensor],
        cotangents: Sequence[torch.Tensor | None],
    ) -> dict:
        """The HVP at the sent inputs for the ``wanted`` inputs: the derivative
        along ``tangents`` (one per differentiable input, None: zero) of the
        VJP of the non-zero ``cotangents``; {} where either is all zero."""
        sent = self.sendable(self.output_wires, cotangents)
        along = self.sendable(self.slot_wires, tangents)
        if not sent or not along or not wanted:
            return {}
        assert self.sent is not None
        # One set is differentiated and moved: the wanted inputs and those
        # moved, a wanted one that does not move along zeros.
        differentiated = [w for w in self.slot_wires if w in wanted or w in along]
        zeros = {
            w: to_sendable(torch.zeros_like(t), self.on_device, None)
            for w, t in zip(self.slot_wires, saved, strict=True)
            if w in differentiated and w not in along
        }
        method = getattr(self.client(), "hessian_vector_product", None)
        if method is None:  # a client of tesseract-core's
            raise RuntimeError(_NO_HVP)
        try:
            return method(
                inputs=self.sent,
                hvp_inputs=differentiated,
                hvp_outputs=list(sent),
                tangent_vector={w: along[w] if w in along else zeros[w] for w in differentiated},
                cotangent_vector=sent,
            )
        except NotImplementedError as e:  # a Tesseract without the endpoint
            raise RuntimeError(_NO_HVP) from e

    def apply(self, tensors: Sequence[torch.Tensor]) -> None:
        """Runs apply and records its flat result and differentiable outputs.
        A tesscpp Tesseract is asked to keep the forward when a backward may
        follow; the server frees it once this call is gone (or at its time
        limit)."""
        self.sent = self.payload(tensors)
        client = self.client()
        if not (self.keep and isinstance(client, EndpointCalls)):
            self.record(client.apply(self.sent))
            return
        reuse = ForwardReuse(keep=True)
        self.record(client.apply(self.sent, reuse=reuse))
        self.residuals = reuse.residuals
        if self.residuals:  # at most once: after the backward, or when this call is gone
            self.release = weakref.finalize(self, client.release_residuals, self.residuals)

    def record(self, result: dict) -> None:
        self.flat_result = flatten_outputs(result, self.templates)
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
        return tuple(as_tensor(values[path]) for path in self.output_paths)


def gradients(
    call: Call, needs: Sequence[bool], saved: Sequence[torch.Tensor], cotangents: Sequence[torch.Tensor | None]
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
            grads.append(as_tensor(result[wire]).to(tensor.device))
        else:
            grads.append(torch.zeros_like(tensor))
    return grads
