"""What the bridge's autograd functions share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ._arrays import require_storage
from ._call import Call


def save_inputs(ctx: Any, call: Call, tensors: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
    """What both autograd functions' setup_context do with their tensor
    arguments; returns the differentiable ones, which it saved for backward."""
    # torch.func hands forward() unwrapped tensors and only setup_context the
    # wrapped ones, so transforms are refused here.
    for tensor in tensors:
        require_storage(tensor)
    # An output the loss does not use gets no cotangent rather than zeros.
    ctx.set_materialize_grads(False)
    # Saved tensors make autograd refuse a backward after an in-place edit of
    # an input, instead of linearising at the edited values; the arrays sent by
    # forward hold the values these tensors had then.
    diff = tensors[: len(call.slot_wires)]
    ctx.save_for_backward(*diff)
    return diff


def apply_function(function: type[torch.autograd.Function], *args: Any) -> Any:
    """``function.apply(*args)`` for a function whose forward has no default
    arguments. Function.apply binds defaults with inspect.signature on every
    call (about 40 µs, a third of the bridge's own time per call); with no
    defaults to bind, and outside functorch transforms, what remains of it is
    unwrapping dead functorch wrappers and the C++ apply."""
    if torch._C._are_functorch_transforms_active():
        return function.apply(*args)
    args = torch._functorch.utils.unwrap_dead_wrappers(args)
    return super(torch.autograd.Function, function).apply(*args)  # type: ignore[misc]
