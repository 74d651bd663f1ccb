"""vadd64: c = a + b in float64 with a VJP and a JVP (the bridge benchmark's component)."""

from pydantic import BaseModel
from tesseract_core.runtime import Array, Differentiable, Float64, ShapeDType


class InputSchema(BaseModel):
    a: Differentiable[Array[(None,), Float64]]
    b: Differentiable[Array[(None,), Float64]]


class OutputSchema(BaseModel):
    c: Differentiable[Array[(None,), Float64]]


def apply(inputs: InputSchema) -> OutputSchema:
    return OutputSchema(c=inputs.a + inputs.b)


def abstract_eval(abstract_inputs):
    """c has a's shape, float64."""
    return {"c": ShapeDType(shape=abstract_inputs.a.shape, dtype="float64")}


def vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent_vector):
    return dict.fromkeys(vjp_inputs, cotangent_vector["c"])


def jacobian_vector_product(inputs, jvp_inputs, jvp_outputs, tangent_vector):
    return {"c": sum(tangent_vector[name] for name in jvp_inputs)}
