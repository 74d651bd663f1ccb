"""``apply_tesseract``: the entry point, as tesseract-jax 0.4.0 has it."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import dtypes

from .._transport import SUPPORTED_GPU_TRANSPORTS
from ._batching import VMAP_METHODS
from ._paths import leaf_paths, templates
from ._primitive import bind
from ._request import Spec


def _is_tesseract(obj: Any) -> bool:
    from .._tesseract import Tesseract

    if isinstance(obj, Tesseract):
        return True
    try:
        from tesseract_core import Tesseract as CoreTesseract
    except ImportError:
        return False
    return isinstance(obj, CoreTesseract)


def _array_schema(schema: dict[str, Any]) -> bool:
    return "array_flags" in schema or schema.get("properties", {}).get("object_type", {}).get("const") == "array"


def _as_array(value: Any, name: str) -> Any:
    if isinstance(value, (jax.Array, np.ndarray, jax.core.Tracer)):
        return value
    if isinstance(value, (int, float, complex, bool, np.number, np.bool_)) or hasattr(value, "__array__"):
        return jnp.asarray(value)
    if isinstance(value, (list, tuple)):
        raise TypeError(
            f"Input '{name}' expects an array, but got {type(value).__name__}. "
            f"Please convert it to a JAX or NumPy array first, e.g. "
            f"jnp.array({name}) or np.array({name})."
        )
    raise TypeError(
        f"Input '{name}' expects an array, but got {type(value).__name__}. "
        f"Accepted types are: JAX/NumPy arrays or scalars (int, float, bool, complex)."
    )


def _coerce(value: Any, schema: dict[str, Any], schemas: dict[str, Any]) -> Any:
    """Scalars and array-likes where the schema has arrays become JAX arrays;
    lists there are refused (tesseract-jax's rule)."""
    properties = schema.get("properties", {})
    if not isinstance(value, dict) or not properties:
        return value

    def resolve(s: dict[str, Any]) -> dict[str, Any]:
        return schemas[s["$ref"].split("/")[-1]] if "$ref" in s else s

    out = {}
    for key, item in value.items():
        field = resolve(properties[key]) if key in properties else None
        if field is None:
            out[key] = item
        elif _array_schema(field):
            out[key] = _as_array(item, key)
        elif field.get("type") == "object" or "properties" in field:
            out[key] = _coerce(item, field, schemas)
        elif field.get("type") == "array" and "items" in field and isinstance(item, (list, tuple)):
            items = resolve(field["items"])
            out[key] = (
                type(item)(_as_array(v, f"{key}[{i}]") for i, v in enumerate(item)) if _array_schema(items) else item
            )
        else:
            out[key] = item
    return out


def _is_aval(x: Any) -> bool:
    return isinstance(x, dict) and "dtype" in x and "shape" in x


def apply_tesseract(
    tesseract_client: Any,
    inputs: Any,
    *,
    vmap_method: str | None = None,
    materialize_jacobian: bool | None = None,
    gpu_transport: str | None = None,
) -> Any:
    """The Tesseract's apply as a JAX operation (tesseract-jax 0.4.0's
    ``apply_tesseract``): jit, grad/vjp (its VJP endpoint), jvp/jacfwd (its
    JVP endpoint), jacrev, and vmap by ``vmap_method`` (None: refused;
    "sequential", "expand_dims", "broadcast_all", "auto_experimental");
    batched (co)tangents at one primal use its jacobian endpoint unless
    ``materialize_jacobian`` is False. Leaves JAX traces are the array
    arguments; everything else is sent as it is. Under jit, a
    ``tesscpp.Tesseract`` is called by XLA's custom call from C++, any other
    Tesseract object from a Python callback (docs/jax-bridge.md).

    ``gpu_transport`` (tesscpp's addition, as in tesscpp.torch): how arrays on
    a CUDA device reach a ``tesscpp.Tesseract``; None lets the Tesseract
    decide (``resolve_gpu_transport``), "none" copies them through the host,
    "cuda_ipc" passes them by IPC handle."""
    if not _is_tesseract(tesseract_client):
        raise TypeError(f"The first argument must be a Tesseract object. Got {type(tesseract_client)} instead.")
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"Unknown vmap_method: {vmap_method!r}. Must be one of {VMAP_METHODS}.")
    if gpu_transport is not None and gpu_transport not in SUPPORTED_GPU_TRANSPORTS:
        raise ValueError(
            f"Unknown gpu_transport: {gpu_transport!r}. Must be None or one of {SUPPORTED_GPU_TRANSPORTS}."
        )
    schemas = tesseract_client.openapi_schema["components"]["schemas"]
    inputs = _coerce(inputs, schemas.get("Apply_InputSchema", {}), schemas)
    leaves, in_tree = jax.tree.flatten(inputs)
    is_static = tuple(not isinstance(leaf, jax.core.Tracer) for leaf in leaves)
    endpoints = tuple(tesseract_client.available_endpoints)
    if "abstract_eval" not in endpoints:
        if not all(is_static):
            raise ValueError(
                "Given Tesseract object does not support abstract_eval, "
                "it is however called in combination with a JAX transformation "
                "like jit, grad, vmap, or pmap. "
                "Either remove the transformation or add an abstract_eval endpoint "
                "to the Tesseract object."
            )
        return tesseract_client.apply(inputs)
    shapes = jax.tree.map(lambda x: {"shape": x.shape, "dtype": x.dtype.name} if hasattr(x, "shape") else x, inputs)
    abstract = tesseract_client.abstract_eval(shapes)
    flat_avals, out_tree = jax.tree.flatten(abstract, is_leaf=_is_aval)
    for aval in flat_avals:
        if _is_aval(aval) and dtypes.canonicalize_dtype(np.dtype(aval["dtype"])) != np.dtype(aval["dtype"]):
            raise ValueError(
                "Cannot return 64-bit values when `jax_enable_x64` is disabled. "
                "Try enabling it with `jax.config.update('jax_enable_x64', True)`."
            )
    avals = tuple(jax.core.ShapedArray(tuple(a["shape"]), np.dtype(a["dtype"])) for a in flat_avals)
    spec = Spec(
        tesseract=tesseract_client,
        endpoints=endpoints,
        in_templates=templates(schemas["ApplyInputSchema"]["differentiable_arrays"]),
        out_templates=templates(schemas["ApplyOutputSchema"]["differentiable_arrays"]),
        in_tree=in_tree,
        static=tuple(leaf if s else None for leaf, s in zip(leaves, is_static, strict=True)),
        is_static=is_static,
        out_tree=out_tree,
        out_paths=tuple(leaf_paths(abstract, is_leaf=_is_aval)),
        vmap_method=vmap_method,
        materialize_jacobian=materialize_jacobian,
        gpu_transport=gpu_transport,
    )
    arrays = [leaf for leaf, s in zip(leaves, is_static, strict=True) if not s]
    out = bind(spec, "apply", arrays, (True,) * len(arrays), avals)
    return jax.tree.unflatten(out_tree, out)
