"""Tensors to what a client sends, and what it decodes back to tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

# DLPack's device type of CUDA memory (kDLCUDA).
_DLPACK_CUDA = 2

TORCH_FUNC_MESSAGE = (
    "apply_tesseract does not support torch.func transforms "
    "(torch.func.vjp, torch.func.jvp, torch.func.grad, etc.). "
    "Use the standard autograd API instead:\n"
    "  - Reverse mode: result['y'].backward() or torch.autograd.grad()\n"
    "  - Forward mode: torch.autograd.forward_ad (dual tensors)"
)


def require_storage(tensor: torch.Tensor) -> None:
    """torch.func wraps tensors in storage-less wrappers; say so clearly."""
    try:
        tensor.data_ptr()
    except RuntimeError:
        raise RuntimeError(TORCH_FUNC_MESSAGE) from None


def to_sendable(tensor: torch.Tensor, on_device: bool, dtype: torch.dtype | None) -> Any:
    """What the client receives for a tensor: a host NumPy array (sharing the
    tensor's memory when it is a CPU tensor), or, on a device transport, the
    contiguous CUDA tensor in the schema's dtype."""
    require_storage(tensor)
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


def is_device_array(value: Any) -> bool:
    """A GPU array from a client: tesscpp's DLPack arrays on a CUDA device, or
    tesseract-core's IpcDeviceArray (which also has the CUDA array interface)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return False
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and device()[0] == _DLPACK_CUDA


def is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) or is_device_array(value)


def as_tensor(value: Any) -> torch.Tensor:
    """A decoded output as a tensor: device arrays adopted through DLPack, NumPy
    arrays wrapped without a copy when writable (copied once otherwise)."""
    if isinstance(value, torch.Tensor):
        return value
    if is_device_array(value):
        return torch.from_dlpack(value)
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    elif not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(array)


def is_zero(tensor: torch.Tensor | None) -> bool:
    """A missing or all-zero (co)tangent; NaN counts as non-zero."""
    if tensor is None:
        return True
    require_storage(tensor)
    return not bool(tensor.any())


def adopt_device_arrays(value: Any) -> Any:
    """Device arrays in non-differentiable outputs become CUDA tensors (no copy)."""
    if is_device_array(value):
        return torch.from_dlpack(value)
    if isinstance(value, dict):
        return {key: adopt_device_arrays(child) for key, child in value.items()}
    if isinstance(value, list):
        return [adopt_device_arrays(child) for child in value]
    return value
