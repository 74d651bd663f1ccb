"""tesscpp's /hessian_vector_product for a tesseract_api.py (docs/derivatives.md).

tesseract-core 1.15 generates the request and answer models of its own three
derivative endpoints only. A module that defines ``hessian_vector_product``
gets this one from pieces of the JVP's and VJP's models that tesseract-core
generates for it — the path sets, the vectors' types, the answer's validator —
with the tangent and cotangent checked by the rules of the JVP's and the VJP's
(keys equal to the path set, a tangent shaped like the concrete input), under
``hvp_`` names. tesseract-runtime ignores the function: the module stays valid
there, without the endpoint.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)

NAME = "hessian_vector_product"
_RESULT = (
    "Container for the results of Hessian-vector products. The result is a mapping with structure "
    "``{hvp_inputs: array}``. The shape of each array is the same as the shape of the corresponding input array."
)


def _annotations_by_pattern(schema: type[BaseModel]) -> dict[str, Any]:
    """The differentiable arrays of `schema` by path pattern, as tesseract-core keys them."""
    from tesseract_core.runtime.schema_generation import _path_to_pattern, get_all_model_path_patterns
    from tesseract_core.runtime.schema_types import is_differentiable

    paths = get_all_model_path_patterns(schema, filter_fn=is_differentiable)
    return {_path_to_pattern(path): annotation for path, annotation in paths.items()}


def _annotation_at(patterns: dict[str, Any], path: str) -> Any:
    from tesseract_core.runtime.schema_generation import _is_regex_pattern

    for pattern, annotation in patterns.items():
        if re.fullmatch(pattern, path) if _is_regex_pattern(pattern) else pattern == path:
            return annotation
    raise ValueError(f"Invalid path: {path}")


def _described(field: Any, description: str) -> tuple[Any, Any]:
    """A field of tesseract-core's generated models, described for the HVP."""
    info = copy.copy(field)
    info.description = description
    return field.annotation, info


def _vector_validators(module: Any) -> tuple[Any, Any]:
    """The tangent's and the cotangent's validators, by the rules of
    tesseract-core's JVP and VJP models, under hvp_ names."""
    from tesseract_core.runtime.schema_generation import _exact_array_adapter, _type_adapter
    from tesseract_core.runtime.tree_transforms import get_at_path

    inputs_by_pattern = _annotations_by_pattern(module.InputSchema)
    outputs_by_pattern = _annotations_by_pattern(module.OutputSchema)

    def keys_of(vector: dict, info: ValidationInfo, name: str, paths: str) -> None:
        if paths not in info.data:
            raise ValueError(f"Unable to validate {name} as {paths} either missing or invalid")
        if set(vector) != info.data[paths]:
            raise ValueError(f"Expected {name} with keys conforming to {paths}: {info.data[paths]}, got {set(vector)}.")

    def tangent(cls: Any, vector: dict, info: ValidationInfo) -> dict:
        """As the JVP's tangent: shaped like the concrete input, the input's dtype."""
        keys_of(vector, info, "tangent vector", "hvp_inputs")
        if "inputs" not in info.data:
            raise ValueError("Unable to validate tangent vector as inputs either missing or invalid")
        validated = {}
        for path, array in vector.items():
            try:
                at = get_at_path(info.data["inputs"], path)
            except (LookupError, AttributeError) as e:
                raise ValueError(f"Could not find tangent_vector path {path} in inputs.") from e
            shape = at.shape if hasattr(at, "shape") else tuple(at["shape"]) if isinstance(at, dict) else ()
            dtype = _annotation_at(inputs_by_pattern, path).expected_dtype
            try:
                validated[path] = _exact_array_adapter(tuple(shape), dtype).validate_python(array, context=info.context)
            except ValidationError as e:
                raise ValueError(f"Tangent vector '{path}': {e}") from e
        return validated

    def cotangent(cls: Any, vector: dict, info: ValidationInfo) -> dict:
        """As the VJP's cotangent: the declared output's type."""
        keys_of(vector, info, "cotangent vector", "hvp_outputs")
        validated = {}
        for path, array in vector.items():
            try:
                adapter = _type_adapter(_annotation_at(outputs_by_pattern, path))
                validated[path] = adapter.validate_python(array, context=info.context)
            except ValidationError as e:
                raise ValueError(f"Cotangent vector '{path}': {e}") from e
        return validated

    return tangent, cotangent


def _models(module: Any) -> tuple[type[BaseModel], type[BaseModel]]:
    """HVPInputSchema and HVPOutputSchema for `module`."""
    from tesseract_core.runtime.schema_generation import apply_function_to_model_tree, create_gradient_schema

    jvp, _ = create_gradient_schema(module.InputSchema, module.OutputSchema, gradient_type="jvp")
    vjp, vjp_result = create_gradient_schema(module.InputSchema, module.OutputSchema, gradient_type="vjp")
    tangent, cotangent = _vector_validators(module)
    inputs = apply_function_to_model_tree(
        module.InputSchema, lambda x, _: x, model_prefix="Hvp_", default_model_config={"extra": "forbid"}
    )
    request = create_model(
        "HVPInputSchema",
        __config__=ConfigDict(extra="forbid"),
        __validators__={
            "validate_tangent_vector": field_validator("tangent_vector", mode="after")(tangent),
            "validate_cotangent_vector": field_validator("cotangent_vector", mode="after")(cotangent),
        },
        inputs=(inputs, Field(..., description="The input data to compute the HVP at.")),
        hvp_inputs=_described(
            jvp.model_fields["jvp_inputs"], "The set of differentiable inputs to compute the HVP with respect to."
        ),
        hvp_outputs=_described(
            vjp.model_fields["vjp_outputs"], "The set of differentiable outputs to compute the HVP of."
        ),
        tangent_vector=_described(
            jvp.model_fields["tangent_vector"],
            "Tangent vector along which the vector-Jacobian product is differentiated. Expected to be a mapping "
            "with structure ``{hvp_inputs: array}``. The shape of each array is the same as the shape of the "
            "corresponding input array.",
        ),
        cotangent_vector=_described(
            vjp.model_fields["cotangent_vector"],
            "Cotangent vector of the vector-Jacobian product that is differentiated. Expected to be a mapping "
            "with structure ``{hvp_outputs: array}``. The shape of each array is the same as the shape of the "
            "corresponding output array.",
        ),
    )
    # The VJP's answer type, its shape validator included (keyed by the input set).
    answer_type: Any = vjp_result.__annotations__["root"]
    result = create_model("HVPOutputSchema", __base__=RootModel, root=(answer_type, Field(..., description=_RESULT)))
    return request, result


def add_route(app: Any, module: Any, runtime_doc: str) -> None:
    """Adds /hessian_vector_product to `app`, the module's API as
    tesseract-core's ``create_rest_api`` made it, as its serve.py adds the
    other derivatives: the same ``accept`` header in the document, the
    endpoint function under ``__wrapped__`` (what tesscpp's host calls)."""
    from fastapi import Header, Query

    request, result = _models(module)

    def hessian_vector_product(payload: Any) -> Any:
        out = module.hessian_vector_product(**dict(payload))
        return result.model_validate(out, context={"input_keys": payload.hvp_inputs})

    # The models themselves, not names FastAPI would look up in this module.
    hessian_vector_product.__annotations__ = {"payload": request, "return": result}

    # The runtime's docstring, then the author's (tesseract-core's assemble_docstring).
    hessian_vector_product.__doc__ = "\n\n".join(d for d in (runtime_doc, module.hessian_vector_product.__doc__) if d)

    @functools.wraps(hessian_vector_product)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tesscpp's runtime calls the endpoint function itself")

    signature = inspect.signature(hessian_vector_product)
    extra = {
        "accept": inspect.Parameter(
            "accept", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=Header(default=None), annotation=str | None
        ),
        "run_id": inspect.Parameter(
            "run_id",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=Annotated[str | None, Query(include_in_schema=False)],
        ),
    }
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *extra.values()]
    )
    app.add_api_route(f"/{NAME}", wrapper, methods=["POST"])
