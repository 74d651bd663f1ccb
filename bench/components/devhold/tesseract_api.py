"""devhold: returns, for an array x, a CUDA array of x's dtype and shape that it
allocated on the first such call and keeps (devhold.cc for tesseract-core's
runtime; the cuda_ipc benchmark's transport-only case)."""

import torch
from pydantic import BaseModel, Field
from tesseract_core.runtime import Array

_held: dict = {}


class InputSchema(BaseModel):
    x: Array[..., None] = Field(description="Any CUDA array.")


class OutputSchema(BaseModel):
    x: Array[..., None] = Field(description="The held array of its dtype and shape.")


def apply(inputs: InputSchema) -> OutputSchema:
    x = torch.from_dlpack(inputs.x)
    key = (x.dtype, tuple(x.shape), x.device)
    if key not in _held:
        _held[key] = torch.empty_like(x)
    return OutputSchema(x=_held[key])
