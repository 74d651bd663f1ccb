"""The endpoint methods of :class:`tesscpp.Tesseract`, with tesseract_core's
names and arguments. Each builds its request from the endpoint's row of the
C++ endpoint table and sends it through the one generic call; a 422 comes
back as pydantic's ValidationError, as tesseract_core raises it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _tesscpp

if TYPE_CHECKING:
    from ._opening import _Shared


def _rebuild_validation_error(failure: _tesscpp.ValidationFailure, endpoint: str) -> Exception:
    """pydantic's ValidationError for a 422, as tesseract_core raises it.

    Without pydantic installed, the tesscpp exception (a ValueError carrying
    the same message and ``errors``) is raised as it is.
    """
    _, title, errors = failure.args
    failure.errors = errors
    title = title or f"endpoint {endpoint}"
    try:
        from pydantic import ValidationError
        from pydantic_core import InitErrorDetails, PydanticCustomError
    except ImportError:
        return failure
    details = [
        InitErrorDetails(
            type=PydanticCustomError(e["type"], e["msg"], e["ctx"]),
            loc=e["loc"],
            input=e["input"],
        )
        for e in errors
    ]
    return ValidationError.from_exception_data(title, line_errors=details)


def _call(method: Callable[..., Any], *args: Any, endpoint: str | None = None) -> Any:
    """Run a C++ call, turning a validation failure into pydantic's error."""
    try:
        return method(*args)
    except _tesscpp.ValidationFailure as failure:
        raise _rebuild_validation_error(failure, endpoint or method.__name__) from None


# The component endpoints' rows of the C++ endpoint table, by name.
_ENDPOINTS = {row["name"]: row for row in _tesscpp.endpoint_rows()}


@dataclass
class ForwardReuse:
    """Forward reuse for one call: tesscpp's extension of the protocol
    (docs/forward-reuse.md), in which an apply keeps what the derivative calls
    at its inputs need, so that they run the reverse pass only. A server
    without it answers as always and keeps nothing.

    ``keep`` (in, apply): ask to keep. ``residuals``: in, for a jacobian,
    JVP or VJP, the reference an apply at the same inputs returned; out, after
    an apply with ``keep``, that reference ("" when nothing was kept).
    ``used`` (out, derivative call): "hit", or "recomputed: <why>" (the answer
    is the same either way). ``release`` (in, any call): references this
    client is done with.
    """

    keep: bool = False
    residuals: str = ""
    used: str = ""
    release: list[str] = field(default_factory=list)


class EndpointCalls:
    """A Tesseract's endpoints, called through its client (``_client``)."""

    if TYPE_CHECKING:
        _shared: _Shared

        @property
        def _client(self) -> _tesscpp._Tesseract: ...

    # Each typed method builds its request from the endpoint's row of the C++
    # endpoint table and sends it through the one generic call.

    def call(self, endpoint: str, body: dict, run_id: str | None = None, *, reuse: ForwardReuse | None = None) -> dict:
        """Post `body`, a whole request, to the component endpoint `endpoint`
        (its path without '/'): for endpoints without a method below. With
        ``reuse``, the call takes part in forward reuse (:class:`ForwardReuse`,
        filled in place)."""
        if reuse is None:
            return _call(self._client.call, endpoint, body, run_id, endpoint=endpoint)
        done = self._shared.done_residuals
        taken = []
        while done:
            try:
                taken.append(done.popleft())
            except IndexError:  # another thread took the last
                break
        try:
            outputs, residuals, used = _call(
                self._client.call_reusing,
                endpoint,
                body,
                run_id,
                reuse.keep,
                reuse.residuals,
                [*reuse.release, *taken],
                endpoint=endpoint,
            )
        except BaseException:
            done.extend(taken)  # said with a later call
            raise
        reuse.residuals, reuse.used = residuals, used
        return outputs

    def release_residuals(self, *references: str) -> None:
        """Forward-reuse references this process is done with: the server
        frees them with the next call that takes part in forward reuse."""
        self._shared.done_residuals.extend(r for r in references if r)

    def _gradient(
        self,
        endpoint: str,
        inputs: dict,
        paths_in: list[str],
        paths_out: list[str],
        tangent: dict | None,
        cotangent: dict | None,
        run_id: str | None,
        reuse: ForwardReuse | None = None,
    ) -> dict:
        row = _ENDPOINTS[endpoint]
        body: dict[str, Any] = {
            "inputs": inputs,
            f"{row['short_name']}_inputs": list(paths_in),
            f"{row['short_name']}_outputs": list(paths_out),
        }
        for name, vector in ((row["tangent_field"], tangent), (row["cotangent_field"], cotangent)):
            if name:
                body[name] = vector
        return self.call(endpoint, body, run_id, reuse=reuse)

    # ``reuse`` (tesscpp's, keyword only): the call takes part in forward
    # reuse (:class:`ForwardReuse`).

    def apply(self, inputs: dict, run_id: str | None = None, *, reuse: ForwardReuse | None = None) -> dict:
        return self.call("apply", {"inputs": inputs}, run_id, reuse=reuse)

    def abstract_eval(self, abstract_inputs: dict) -> dict:
        return self.call("abstract_eval", {"inputs": abstract_inputs})

    def health(self) -> dict:
        return _call(self._client.health)

    def jacobian(
        self,
        inputs: dict,
        jac_inputs: list[str],
        jac_outputs: list[str],
        run_id: str | None = None,
        *,
        reuse: ForwardReuse | None = None,
    ) -> dict:
        return self._gradient("jacobian", inputs, jac_inputs, jac_outputs, None, None, run_id, reuse)

    def jacobian_vector_product(
        self,
        inputs: dict,
        jvp_inputs: list[str],
        jvp_outputs: list[str],
        tangent_vector: dict,
        run_id: str | None = None,
        *,
        reuse: ForwardReuse | None = None,
    ) -> dict:
        return self._gradient(
            "jacobian_vector_product", inputs, jvp_inputs, jvp_outputs, tangent_vector, None, run_id, reuse
        )

    def vector_jacobian_product(
        self,
        inputs: dict,
        vjp_inputs: list[str],
        vjp_outputs: list[str],
        cotangent_vector: dict,
        run_id: str | None = None,
        *,
        reuse: ForwardReuse | None = None,
    ) -> dict:
        return self._gradient(
            "vector_jacobian_product", inputs, vjp_inputs, vjp_outputs, None, cotangent_vector, run_id, reuse
        )

    def hessian_vector_product(
        self,
        inputs: dict,
        hvp_inputs: list[str],
        hvp_outputs: list[str],
        tangent_vector: dict,
        cotangent_vector: dict,
        run_id: str | None = None,
        *,
        reuse: ForwardReuse | None = None,
    ) -> dict:
        """tesscpp's Hessian-vector product (docs/derivatives.md): the derivative
        along ``tangent_vector`` (keyed by ``hvp_inputs``) of the VJP of
        ``cotangent_vector`` (keyed by ``hvp_outputs``), keyed by ``hvp_inputs``."""
        return self._gradient(
            "hessian_vector_product", inputs, hvp_inputs, hvp_outputs, tangent_vector, cotangent_vector, run_id, reuse
        )

    def test(self, test_spec: dict) -> None:
        """Run a TestSpec on the debug-mode /test endpoint: AssertionError when it
        fails, RuntimeError when it errors."""
        status, message = _call(self._client.test, test_spec)
        if status == "failed":
            raise AssertionError(message)
        if status == "error":
            raise RuntimeError(message)
