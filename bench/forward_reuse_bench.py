#!/usr/bin/env python3
"""Forward reuse (docs/forward-reuse.md, issue 57): what a training step costs
when the VJP reuses the apply's forward, against recomputing it and against
tesseract-core's peers, in three forms, each sized so that one apply takes
about 100 ms here:

- torch:  bench/components/hammerstein_torch, a nonlinear Hammerstein integral
          equation (bench/components/hammerstein.py): Newton with a dense LU
          factorization per iteration, the VJP one transposed solve with the
          last factors (implicit function theorem), so forward-dominated
          (torch.autograd.Function under torch.func.vjp; tesscpp.reuse's torch
          helpers when tesscpp serves it);
- JAX:    bench/components/hammerstein_jax_recipe, the same equation on
          tesseract-core's JAX recipe (jax.custom_vjp; tesscpp.reuse when
          tesscpp serves it, or tesseract-core's own VJP cache with
          HAMMERSTEIN_JAX_VJP_CACHE=1);
- C++:    examples/burgers_ad, explicit steps of 1-D viscous Burgers (derived
          derivatives, tesscpp/autodiff.h): reverse-dominated, its reverse
          several times its apply.

A step is one train step through a bridge: apply + VJP, loss = sum of the
array output + energy (sum(u) + energy for Hammerstein, sum(u_next) + energy
for Burgers), gradients with respect to the array input (s; u) and nu
(backward in torch, jax.jit(jax.value_and_grad(loss)) in JAX). All servers of
a form run at once and its measurements take turns round by round, so that
this VM's drift hits the rows compared alike (but for the C++ form's, whose
tapes on disk interfere; see FORMS): a first round whose answers are checked,
one untimed round more for calls under WARM_ENOUGH_S (a fresh server's first
large calls fault in memory), then --rounds timed rounds; each figure is the
median. Rows:

- tesscpp.torch.apply_tesseract on `tesscpp serve` (torch module, C++
  component), with reuse on and off;
- tesseract-torch over tesseract-core's SDK on `tesseract-runtime serve`
  (torch module);
- tesscpp.jax.apply_tesseract on `tesscpp serve` (JAX module, C++ component),
  reuse on and off, and the JAX module with tesseract-core's cache;
- tesseract-jax over the SDK on `tesseract-runtime serve` (JAX module), with
  and without tesseract-core's cache.

"Reuse off" serves with --residual-host-mib 0 --residual-device-mib 0 (the
extension off: nothing is kept, every VJP recomputes); "reuse on" with a host
budget of RESIDUAL_ON_MIB, far above what a step keeps (the Hammerstein forms'
LU factors, ~10 MB). The reference costs of each form: one apply alone and one
VJP alone (no reuse: forward + reverse) through the plain client of each
server, and the reverse only, measured where the server keeps: on the "reuse
on" tesscpp server, tesscpp's plain client sends an apply asking to keep, then
a VJP referring to it (its answer must say "hit"), and that VJP alone is
timed. The goal "step <= 1.1 x (apply + reverse only)" is read with that
measured reverse, for the rows of both server kinds (the same module's
reverse pass); the older reading, VJP - apply, is shown beside it (for the C++
form it includes the tape's forward sweep). tesscpp rows also show the
server's /metrics residual counters over the row (kept, hits, misses, over
budget); tesseract-core's cache counts nothing, so on its servers a VJP right
after an apply at the same inputs is timed too (a hit runs the reverse pass
only). json+base64, run directories on /dev/shm; the log on stderr has every
call's time.

    .venv/bin/python bench/forward_reuse_bench.py --build build/ci
    .venv/bin/python bench/forward_reuse_bench.py --build build/ci --quick   # tiny sizes, a smoke run

On the GPU machine, after scripts/gpu/build_and_test.sh (its build in
/tmp/tesscpp-build): `python3 bench/forward_reuse_bench.py --build
/tmp/tesscpp-build --device cuda --forms torch --size N` runs the torch
form with CUDA tensors, every server with cuda_ipc, the peer's client with
`with_encoding(gpu_transport="cuda_ipc")`; the kept pullback then holds device
memory (docs/forward-reuse.md §5).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import tesseract_core
import tesseract_jax
import tesseract_torch
import torch

jax.config.update("jax_enable_x64", True)
# Both JAX bridges fill the cotangents of the C++ form's integer input `steps`
# with NaN cast to int64 (never used); numpy warns about the cast on every VJP.
warnings.filterwarnings("ignore", "invalid value encountered in cast", RuntimeWarning)

ROOT = Path(__file__).resolve().parents[1]
RESIDUAL_ON_MIB = 4096
CORE_CACHE_ENV = "HAMMERSTEIN_JAX_VJP_CACHE"  # read by hammerstein_jax_recipe at import
HAMMERSTEIN_NU, ELL = 1.5, 0.5  # a contraction (bench/components/hammerstein.py): Newton takes 4 iterations
BURGERS_NU, DT, DX = 0.05, 1e-4, 1e-2
GOAL = 1.1  # step <= GOAL x (apply + reverse only)
WARM_ENOUGH_S = 2.0  # a first call this long is warm-up enough
METRICS = {
    "kept": "tesscpp_residual_kept_total",
    "hit": 'tesscpp_residual_lookups_total{outcome="hit"}',
    "miss": 'tesscpp_residual_lookups_total{outcome="miss"}',
    "over budget": 'tesscpp_residual_dropped_total{reason="over_budget"}',
}


@dataclass
class Problem:
    """A form's inputs at its size, and the answer once known."""

    solver: str
    size: str
    array: str  # the differentiable array input
    output: str  # the array output: loss = sum(output) + energy
    value: np.ndarray  # the array input's
    nu: float
    constants: dict[str, Any]  # the inputs not differentiated
    expected: tuple[float, np.ndarray, float] | None = None  # loss, d/d array, d/dnu
    device: str = "cpu"  # "cuda": the array input and its cotangent are CUDA tensors (cuda_ipc)

    def inputs(self, array: Any, nu: Any) -> dict[str, Any]:
        return {self.array: array, "nu": nu, **self.constants}

    def vjp_request(self) -> tuple[dict[str, Any], list[str], list[str], dict[str, Any]]:
        """A plain client's VJP of the loss: inputs, vjp_inputs, vjp_outputs, cotangents."""
        array, ones = self.value, np.ones_like(self.value)
        if self.device != "cpu":
            array, ones = torch.from_numpy(array).to(self.device), torch.from_numpy(ones).to(self.device)
        cotangent = {self.output: ones, "energy": 1.0}
        return self.inputs(array, self.nu), [self.array, "nu"], [self.output, "energy"], cotangent

    def answer(self, outputs: dict, grads: dict) -> tuple[float, np.ndarray, float]:
        """(loss, d/d array, d/dnu) from a plain client's apply and VJP."""
        loss = float(np.sum(on_host(outputs[self.output])) + on_host(outputs["energy"]))
        return loss, on_host(grads[self.array]), float(on_host(grads["nu"]))

    def check(self, loss: float, grad_array: np.ndarray, grad_nu: float) -> None:
        if self.expected is None:
            return
        want_loss, want_array, want_nu = self.expected
        np.testing.assert_allclose(loss, want_loss, rtol=1e-9, err_msg="loss")
        np.testing.assert_allclose(grad_array, want_array, rtol=1e-8, atol=1e-12, err_msg=f"d loss / d {self.array}")
        np.testing.assert_allclose(grad_nu, want_nu, rtol=1e-8, err_msg="d loss / d nu")


def on_host(array: Any) -> np.ndarray:
    """A client's answer as a NumPy array: device arrays (cuda_ipc's) copied."""
    if hasattr(array, "__cuda_array_interface__"):
        return torch.from_dlpack(array).cpu().numpy()
    return np.asarray(array)


def hammerstein(n: int) -> Problem:
    """The Hammerstein solver's inputs on n nodes: a smooth source with noise."""
    x = np.linspace(0.0, 1.0, n)
    s = np.sin(2 * np.pi * x) + 0.1 * np.random.default_rng(42).standard_normal(n)
    return Problem("Hammerstein (Newton, dense LU)", f"N = {n}", "s", "u", s, HAMMERSTEIN_NU, {"ell": ELL})


def burgers(cells: int, steps: int) -> Problem:
    """The Burgers solver's inputs: a random velocity on `cells`, `steps` explicit steps."""
    u = np.random.default_rng(42).standard_normal(cells)
    constants = {"dt": DT, "dx": DX, "steps": steps}
    return Problem("Burgers (explicit steps)", f"{cells} cells, {steps} steps", "u", "u_next", u, BURGERS_NU, constants)


@dataclass
class Form:
    """One of the three forms: its source and its problem at full and quick size."""

    name: str
    source: str  # a tesseract_api.py under ROOT, or a library under the build
    problem: Callable[..., Problem]
    size: tuple[int, ...]  # the problem's arguments: about 100 ms per apply on the 2-core development VM
    quick: tuple[int, ...]  # --quick's
    together: bool = True  # its servers all at once, taking turns; else one after the other


FORMS = {
    # N: the torch and JAX forms' LU factorizations run at different speeds.
    "torch": Form("torch", "bench/components/hammerstein_torch/tesseract_api.py", hammerstein, (1100,), (200,)),
    "jax": Form("JAX", "bench/components/hammerstein_jax_recipe/tesseract_api.py", hammerstein, (1000,), (200,)),
    # One server at a time: ADOL-C writes each VJP's tape (~6.5 GB here) to files,
    # and next to a second server's the kept tape went back and forth to disk (reuse
    # on measured 1.4-1.7x slower than off, against 1.04x faster with either alone).
    "cpp": Form("C++", "examples/libburgers_ad.so", burgers, (10_000, 2_500), (200, 10), together=False),
}


@dataclass
class Plan:
    """One server and the rows measured on it."""

    form: str
    runtime: str  # "tesscpp" or "tesseract-runtime"
    cache: str  # what keeps the forward: "reuse on", "reuse off", "core cache", "none"
    bridges: list[str]
    reference: bool = False  # time apply and VJP alone here
    runtime_config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    reverse: bool = False  # time a VJP referring to a kept apply here: the reverse only


def plans() -> list[Plan]:
    on = {"residual_host_mb": RESIDUAL_ON_MIB, "residual_device_mb": RESIDUAL_ON_MIB}
    # Both budgets 0 turn the extension off: with only the host's 0, an apply
    # asked to keep still builds its state (a torch graph, an ADOL-C tape),
    # which the store then refuses, and "off" would pay for it.
    off = {"residual_host_mb": 0, "residual_device_mb": 0}
    core = {CORE_CACHE_ENV: "1"}
    # The reference plan of each form comes first: its answers check the others'. tesscpp's reference
    # calls go to the server with reuse off, where no kept state of a step's is being held or freed.
    return [
        Plan("torch", "tesscpp", "reuse off", ["tesscpp.torch"], True, off),
        Plan("torch", "tesscpp", "reuse on", ["tesscpp.torch"], False, on, reverse=True),
        Plan("torch", "tesseract-runtime", "none", ["tesseract-torch"], True),
        Plan("jax", "tesscpp", "reuse off", ["tesscpp.jax"], True, off),
        Plan("jax", "tesscpp", "reuse on", ["tesscpp.jax"], False, on, reverse=True),
        Plan("jax", "tesscpp", "core cache", ["tesscpp.jax"], False, on, core),
        Plan("jax", "tesseract-runtime", "none", ["tesseract-jax"], True),
        Plan("jax", "tesseract-runtime", "core cache", ["tesseract-jax"], False, {}, core),
        Plan("cpp", "tesscpp", "reuse off", ["tesscpp.torch", "tesscpp.jax"], True, off),
        Plan("cpp", "tesscpp", "reuse on", ["tesscpp.torch", "tesscpp.jax"], False, on, reverse=True),
    ]


@dataclass
class Row:
    plan: Plan
    bridge: str
    seconds: float = float("nan")
    counters: dict[str, float] | None = None
    error: str = ""


@dataclass
class Reference:
    """A server kind's apply alone and VJP alone (forward + reverse)."""

    apply: float = float("nan")
    vjp: float = float("nan")


def fmt_time(s: float) -> str:
    if s != s:
        return "—"
    size = abs(s)  # negative: a difference of two times
    return f"{s * 1e6:.0f} µs" if size < 1e-3 else (f"{s * 1e3:.1f} ms" if size < 1 else f"{s:.2f} s")


def timed(call: Callable[[], Any], scratch: Path) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - t0
    # A run directory per call piles up on /dev/shm otherwise.
    for run in scratch.glob("*/run_*"):
        shutil.rmtree(run, ignore_errors=True)
    return elapsed, result


def torch_step(apply: Callable, tesseract: Any, problem: Problem) -> Callable[[], tuple]:
    def step() -> tuple:
        array = torch.from_numpy(problem.value.copy()).to(problem.device).requires_grad_()
        nu = torch.tensor(problem.nu, dtype=torch.float64, device=problem.device, requires_grad=True)
        out = apply(tesseract, problem.inputs(array, nu))
        loss = out[problem.output].sum() + out["energy"]
        loss.backward()
        return loss.item(), array.grad.cpu().numpy(), nu.grad.item()

    return step


def jax_step(apply: Callable, tesseract: Any, problem: Problem) -> Callable[[], tuple]:
    def loss(array: jax.Array, nu: jax.Array) -> jax.Array:
        out = apply(tesseract, problem.inputs(array, nu))
        return jnp.sum(out[problem.output]) + out["energy"]

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    array, nu = jnp.asarray(problem.value), jnp.asarray(problem.nu, dtype=jnp.float64)

    def run() -> tuple:
        value, (grad_array, grad_nu) = jax.block_until_ready(step(array, nu))
        return float(value), np.asarray(grad_array), float(grad_nu)

    return run


def metric_values(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


@contextlib.contextmanager
def environment(extra: dict[str, str]) -> Iterator[None]:
    """`extra` in this process's environment while the server starts (it
    inherits it; tesscpp's from_source passes on all but TESSERACT_*)."""
    saved = {key: os.environ.get(key) for key in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".replace("\n", " ").replace("|", "/")
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass
class Measure:
    """One thing timed once a round: `call` returns the seconds of the part
    timed and the answer `check` is given on the first call."""

    label: str
    call: Callable[[], tuple[float, Any]]
    check: Callable[[Any], None]
    done: Callable[[float], None]  # given the median
    fail: Callable[[BaseException], None]
    samples: list[float] = field(default_factory=list)
    untimed: str = ""  # the seconds of the untimed calls, for the log
    failed: bool = False


class Bench:
    """All servers of a form at once, their measurements taking turns round by
    round, so that this VM's drift (fresh-page faults, another process's load)
    hits the rows compared alike."""

    def __init__(self, tesscpp: Any, build: Path, rounds: int, problems: dict[str, Problem]) -> None:
        self.tesscpp = tesscpp
        self.build = build
        self.rounds = rounds
        self.problems = problems
        shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
        self.scratch = Path(tempfile.mkdtemp(dir=shm, prefix="forward_reuse_"))
        self.rows: list[Row] = []
        self.references: dict[tuple[str, str], Reference] = {}
        self.reverse_only: dict[str, float] = {}  # by form: a VJP using a kept apply, on tesscpp
        self.cache_probes: dict[tuple[str, str], float] = {}  # VJP right after apply, core cache
        self.failures: list[str] = []

    def source(self, form: str) -> Path:
        relative = FORMS[form].source
        return self.build / relative if relative.endswith(".so") else ROOT / relative

    def serve(self, plan: Plan, output: Path, cleanup: contextlib.ExitStack) -> Any:
        kwargs: dict[str, Any] = {"output_path": output, "startup_timeout": 180}
        if plan.runtime_config:
            kwargs["runtime_config"] = plan.runtime_config
        source = self.source(plan.form)
        if self.problems[plan.form].device == "cuda":
            kwargs["gpu_transport"] = "cuda_ipc"
        if source.suffix == ".py":
            kwargs.update(python_executable=sys.executable, python_runtime=plan.runtime)
        server = self.tesscpp.Tesseract.from_source(source, **kwargs)
        with environment(plan.env):
            server.serve()
        return server

    def run_form(self, form: str, form_plans: list[Plan]) -> None:
        print(
            f"[{time.strftime('%H:%M:%S')}] {FORMS[form].name}: "
            + ", ".join(f"{p.runtime} ({p.cache})" for p in form_plans),
            file=sys.stderr,
            flush=True,
        )
        measures: list[Measure] = []
        with contextlib.ExitStack() as servers:
            for index, plan in enumerate(form_plans):
                label = f"{FORMS[plan.form].name} on {plan.runtime} ({plan.cache})"
                rows = [Row(plan, bridge) for bridge in plan.bridges]
                self.rows += rows
                output = Path(tempfile.mkdtemp(dir=self.scratch, prefix=f"{form}{index}_"))
                try:
                    server = self.serve(plan, output, servers)
                except Exception as error:  # noqa: BLE001 - a server that does not start fails its rows only
                    self.fail(rows, f"{label}: server did not start", error)
                    continue
                servers.callback(server.teardown)
                ours = plan.runtime == "tesscpp"
                client = (self.tesscpp.Tesseract if ours else tesseract_core.Tesseract).from_url(server.url)
                if not ours and self.problems[form].device == "cuda":
                    client = client.with_encoding(gpu_transport="cuda_ipc")
                if plan.reference:
                    measures += self.reference(plan, client, label)
                if plan.reverse:
                    measures.append(self.reverse(plan, client, label))
                if plan.cache == "core cache":
                    measures.append(self.probe_cache(plan, client, label))
                measures += [self.step_row(row, client, server.url if ours else None, label) for row in rows]
            self.take_turns(measures)
        for measure in measures:
            median = f"{fmt_time(float(np.median(measure.samples)))}" if measure.samples else "failed"
            samples = ", ".join(fmt_time(x) for x in measure.samples)
            print(f"  {measure.label}: {median} (untimed: {measure.untimed}; timed: {samples})", file=sys.stderr)

    def take_turns(self, measures: list[Measure]) -> None:
        """A first round (answers checked, JAX compiles), a round of warm-up
        for calls under WARM_ENOUGH_S (a fresh server's first large calls
        fault in memory; one call of seconds is warm-up enough, and more would
        cost minutes), then --rounds timed rounds."""
        first: dict[int, float] = {}
        for round_ in range(2 + self.rounds):
            for index, measure in enumerate(measures):
                if measure.failed or (round_ == 1 and first.get(index, 0.0) >= WARM_ENOUGH_S):
                    continue
                try:
                    seconds, answer = measure.call()
                    if round_ == 0:
                        measure.check(answer)
                        first[index] = seconds
                    if round_ < 2:
                        measure.untimed += (", " if measure.untimed else "") + fmt_time(seconds)
                    else:
                        measure.samples.append(seconds)
                except Exception as error:  # noqa: BLE001 - a failing row is reported, the others still run
                    measure.failed = True
                    measure.fail(error)
        for measure in measures:
            if not measure.failed and measure.samples:
                measure.done(float(np.median(measure.samples)))

    def reference(self, plan: Plan, client: Any, label: str) -> list[Measure]:
        """Apply alone and VJP alone (no reuse asked: forward + reverse); the
        first server's answers are the ones every other call is checked against."""
        problem = self.problems[plan.form]
        inputs, vjp_inputs, vjp_outputs, cotangent = problem.vjp_request()
        ref = self.references.setdefault((plan.form, plan.runtime), Reference())
        applied: list[dict] = []

        def apply() -> tuple[float, Any]:
            return timed(lambda: client.apply(inputs), self.scratch)

        def vjp() -> tuple[float, Any]:
            return timed(
                lambda: client.vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent), self.scratch
            )

        def check_vjp(grads: dict) -> None:
            answer = problem.answer(applied[0], grads)
            if problem.expected is None:
                problem.expected = answer
            else:
                problem.check(*answer)

        def done(field_name: str) -> Callable[[float], None]:
            return lambda seconds: setattr(ref, field_name, seconds)

        def fail(error: BaseException) -> None:
            traceback.print_exc()
            self.failures.append(f"reference, {label}: {short(error)}")

        return [
            Measure(f"{label}: apply alone", apply, applied.append, done("apply"), fail),
            Measure(f"{label}: VJP alone", vjp, check_vjp, done("vjp"), fail),
        ]

    def reverse(self, plan: Plan, client: Any, label: str) -> Measure:
        """The reverse pass alone, where the server keeps: an apply asking to
        keep (untimed), then a VJP referring to it, timed, whose answer must
        say it used the kept forward. Its reference is released with the
        client's next call that takes part (the next round's apply, or a
        bridge's step)."""
        problem = self.problems[plan.form]
        inputs, vjp_inputs, vjp_outputs, cotangent = problem.vjp_request()

        def call() -> tuple[float, Any]:
            keep = self.tesscpp.ForwardReuse(keep=True)
            outputs = client.apply(inputs, reuse=keep)
            if not keep.residuals:
                raise RuntimeError("the apply asked to keep kept nothing")
            refer = self.tesscpp.ForwardReuse(residuals=keep.residuals)
            try:
                seconds, grads = timed(
                    lambda: client.vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent, reuse=refer),
                    self.scratch,
                )
            finally:
                client.release_residuals(keep.residuals)
            if refer.used != "hit":
                raise RuntimeError(f"the VJP did not use the kept forward ({refer.used or 'no answer'})")
            return seconds, (outputs, grads)

        def store(seconds: float) -> None:
            self.reverse_only[plan.form] = seconds

        def fail(error: BaseException) -> None:
            traceback.print_exc()
            self.failures.append(f"reverse only, {label}: {short(error)}")

        return Measure(
            f"{label}: VJP referring to a kept apply",
            call,
            lambda answer: problem.check(*problem.answer(*answer)),
            store,
            fail,
        )

    def probe_cache(self, plan: Plan, client: Any, label: str) -> Measure:
        """A VJP right after an apply at the same inputs (the apply untimed):
        the reverse pass alone if tesseract-core's cache hit, which nothing
        else shows."""
        inputs, vjp_inputs, vjp_outputs, cotangent = self.problems[plan.form].vjp_request()

        def vjp_after_apply() -> tuple[float, Any]:
            client.apply(inputs)
            return timed(
                lambda: client.vector_jacobian_product(inputs, vjp_inputs, vjp_outputs, cotangent), self.scratch
            )

        def store(seconds: float) -> None:
            self.cache_probes[(plan.form, plan.runtime)] = seconds

        def fail(error: BaseException) -> None:
            traceback.print_exc()
            self.failures.append(f"cache probe, {label}: {short(error)}")

        return Measure(f"{label}: VJP right after apply", vjp_after_apply, lambda _: None, store, fail)

    def step_row(self, row: Row, client: Any, metrics_url: str | None, label: str) -> Measure:
        problem = self.problems[row.plan.form]
        bridges = {
            "tesscpp.torch": (torch_step, self.tesscpp.torch.apply_tesseract),
            "tesseract-torch": (torch_step, tesseract_torch.apply_tesseract),
            "tesscpp.jax": (jax_step, self.tesscpp.jax.apply_tesseract),
            "tesseract-jax": (jax_step, tesseract_jax.apply_tesseract),
        }
        make, apply = bridges[row.bridge]
        step = make(apply, client, problem)
        if metrics_url:
            row.counters = dict.fromkeys(METRICS, 0.0)

        def call() -> tuple[float, Any]:
            # The counters of every step of the row, warm-up included, and of
            # nothing else (the server's other calls are the plain client's).
            before = metric_values(metrics_url) if metrics_url else {}
            seconds, answer = timed(step, self.scratch)
            if metrics_url and row.counters is not None:
                after = metric_values(metrics_url)
                for key, name in METRICS.items():
                    row.counters[key] += after.get(name, 0.0) - before.get(name, 0.0)
            return seconds, answer

        def check(answer: tuple) -> None:
            problem.check(*answer)

        def store(seconds: float) -> None:
            row.seconds = seconds

        return Measure(
            f"{label}: {row.bridge} step",
            call,
            check,
            store,
            lambda error: self.fail([row], f"{row.bridge}, {label}", error),
        )

    def fail(self, rows: list[Row], what: str, error: BaseException) -> None:
        traceback.print_exc()
        for row in rows:
            row.error = short(error)
        self.failures.append(f"{what}: {short(error)}")


def step_of(rows: list[Row], form: str, runtime: str, cache: str, bridge: str) -> float:
    for row in rows:
        if (row.plan.form, row.plan.runtime, row.plan.cache, row.bridge) == (form, runtime, cache, bridge):
            return row.seconds
    return float("nan")


def ratio(numerator: float, denominator: float) -> str:
    value = numerator / denominator if denominator == denominator and denominator > 0 else float("nan")
    return "—" if value != value else f"{value:.2f}x"


def counters_text(counters: dict[str, float] | None) -> str:
    if counters is None:
        return "—"
    return ", ".join(f"{int(value)} {key}" for key, value in counters.items())


def header(device: str) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    revision = commit.stdout.strip() or "?"
    if dirty.stdout.strip():
        revision += " with uncommitted changes"
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    cores = len(os.sched_getaffinity(0))
    gpu = f"; {torch.cuda.get_device_name()}, cuda_ipc" if device == "cuda" else ""
    print(
        f"<!-- commit {revision}; {cpu}, {cores} cores{gpu}; bench/forward_reuse_bench.py {' '.join(sys.argv[1:])}"
        f"; jax {jax.__version__}, torch {torch.__version__} -->"
    )
    print(f"# forward reuse benchmark, {time.strftime('%Y-%m-%d', time.gmtime())}")
    print()


def reference_tables(bench: Bench) -> None:
    print(
        "Reference costs. Apply and VJP: each alone, through the plain client (tesscpp's on `tesscpp serve`, "
        "tesseract-core's SDK on tesseract-runtime), no reuse asked, so the VJP runs forward + reverse. Reverse only: "
        "measured on the reuse-on `tesscpp serve`, where tesscpp's plain client sends an apply asking to keep and "
        "then a VJP referring to it (answered `hit`), the VJP alone timed; the same module's reverse pass, so it "
        "stands for tesseract-runtime's too. VJP − apply: the older, indirect reading (for the C++ form it includes "
        "the tape's forward sweep)."
    )
    print()
    print(
        "| form | server | solver | size | apply | VJP | reverse only (measured) | VJP − apply | apply + reverse only |"
    )
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (form, runtime), ref in bench.references.items():
        problem = bench.problems[form]
        reverse = bench.reverse_only.get(form, float("nan"))
        whose = " (tesscpp's)" if runtime != "tesscpp" and reverse == reverse else ""
        print(
            f"| {FORMS[form].name} | {runtime} | {problem.solver} | {problem.size} | {fmt_time(ref.apply)} "
            f"| {fmt_time(ref.vjp)} | {fmt_time(reverse)}{whose} | {fmt_time(ref.vjp - ref.apply)} "
            f"| {fmt_time(ref.apply + reverse)} |"
        )
    if bench.cache_probes:
        print()
        print(
            f"tesseract-core's cache ({CORE_CACHE_ENV}=1): a VJP right after an apply at the same inputs, plain "
            "client, against the same server kind's VJP alone and the measured reverse only above (a hit runs the "
            "reverse alone; a miss, forward + reverse):"
        )
        print()
        print(
            "| form | server | VJP right after apply | VJP alone | reverse only (measured) "
            "| after apply / reverse only |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for (form, runtime), seconds in bench.cache_probes.items():
            ref = bench.references.get((form, runtime), Reference())
            reverse = bench.reverse_only.get(form, float("nan"))
            print(
                f"| {FORMS[form].name} | {runtime} | {fmt_time(seconds)} | {fmt_time(ref.vjp)} | {fmt_time(reverse)} "
                f"| {ratio(seconds, reverse)} |"
            )


def report(bench: Bench, rounds: int, device: str) -> None:
    header(device)
    print(
        "A train step: apply + VJP through a bridge, loss = sum of the array output + energy (Hammerstein: sum(u); "
        "Burgers: sum(u_next)), gradients with respect to the array input (s; u) and nu; median of "
        f"{rounds} steps after untimed ones, the rows of a form taking turns. Reuse on: "
        f"`tesscpp serve --residual-host-mib {RESIDUAL_ON_MIB} --residual-device-mib {RESIDUAL_ON_MIB}`; "
        "off: `--residual-host-mib 0 --residual-device-mib 0`. "
        "Core cache: tesseract-core's "
        f"`set_jax_vjp_cache_size(1)` in the module ({CORE_CACHE_ENV}=1)."
    )
    print()
    reference_tables(bench)
    print()
    print(
        "Train steps. step / (apply + reverse only): against the apply of the same form and server and the "
        f"form's measured reverse only (goal ≤ {GOAL}). off / on: the same bridge and server with reuse off over "
        "this row. peer / this: "
        "tesseract-torch or tesseract-jax on tesseract-runtime (with tesseract-core's cache where it has one) "
        "over this row, same module. Residual counters: the server's /metrics over the row "
        "(every step of the row, warm-up included)."
    )
    print()
    print(
        "| form | bridge → server | forward kept by | step | step / (apply + reverse only) | off / on "
        "| peer / this | residual counters (tesscpp) |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    order = {"reuse on": 0, "reuse off": 1, "core cache": 2, "none": 3}
    rows = sorted(
        bench.rows,
        key=lambda r: (
            list(FORMS).index(r.plan.form),
            r.plan.runtime != "tesscpp",
            order[r.plan.cache],
            r.plan.bridges.index(r.bridge),
        ),
    )
    for row in rows:
        plan = row.plan
        name = f"{row.bridge} → {'tesscpp serve' if plan.runtime == 'tesscpp' else 'tesseract-runtime serve'}"
        cache = {
            "reuse on": "tesscpp.reuse",
            "reuse off": "nothing (reuse off)",
            "none": "nothing",
            "core cache": "tesseract-core's cache",
        }[plan.cache]
        if plan.form == "cpp" and plan.cache == "reuse on":
            cache = "tesscpp (derived derivatives)"
        if row.error:
            print(f"| {FORMS[plan.form].name} | {name} | {cache} | failed: {row.error} | | | | |")
            continue
        ref = bench.references.get((plan.form, plan.runtime), Reference())
        kept = plan.cache in ("reuse on", "core cache")  # the rows the goal is for
        to_goal = "—"
        value = row.seconds / (ref.apply + bench.reverse_only.get(plan.form, float("nan")))
        if value == value:
            to_goal = f"{value:.2f}x" + ((" ok" if value <= GOAL else " MISSED") if kept else "")
        off_on = "—"
        if kept:
            off_cache = "reuse off" if plan.runtime == "tesscpp" else "none"
            off_on = ratio(step_of(rows, plan.form, plan.runtime, off_cache, row.bridge), row.seconds)
        peer = "—"
        if plan.runtime == "tesscpp" and plan.form in ("torch", "jax"):
            peer_bridge = "tesseract-torch" if plan.form == "torch" else "tesseract-jax"
            peer_cache = "none" if plan.form == "torch" else "core cache"
            peer = ratio(step_of(rows, plan.form, "tesseract-runtime", peer_cache, peer_bridge), row.seconds)
        print(
            f"| {FORMS[plan.form].name} | {name} | {cache} | {fmt_time(row.seconds)} | {to_goal} | {off_on} "
            f"| {peer} | {counters_text(row.counters)} |"
        )
    if bench.failures:
        print()
        print("Failures:")
        print()
        for failure in bench.failures:
            print(f"- {failure}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--rounds", type=int, default=3, help="timed calls per row, after the warm-up ones")
    ap.add_argument("--steps", type=int, help="the Burgers solver's time steps (the C++ form; default: per size)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (FORMS' quick: a smoke run)")
    ap.add_argument("--forms", nargs="+", choices=sorted(FORMS), default=sorted(FORMS), help="forms to run")
    ap.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="cuda: the torch form with CUDA tensors, served with cuda_ipc (the other forms run on the CPU only)",
    )
    ap.add_argument("--size", type=int, help="N of the Hammerstein forms (default: FORMS' size)")
    args = ap.parse_args()
    if args.device == "cuda" and set(args.forms) != {"torch"}:
        ap.error("--device cuda runs the torch form only: add --forms torch")
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.jax
    import tesscpp.torch

    problems = {}
    for key, form in FORMS.items():
        size = form.quick if args.quick else form.size
        if args.steps and form.problem is burgers:
            size = (size[0], args.steps)
        if args.size and form.problem is hammerstein:
            size = (args.size,)
        problems[key] = form.problem(*size)
        problems[key].device = args.device
    bench = Bench(tesscpp, build, args.rounds, problems)
    try:
        for form in FORMS:
            if form in args.forms:
                form_plans = [plan for plan in plans() if plan.form == form]
                for group in [form_plans] if FORMS[form].together else [[plan] for plan in form_plans]:
                    bench.run_form(form, group)
    finally:
        shutil.rmtree(bench.scratch, ignore_errors=True)
    report(bench, args.rounds, args.device)


if __name__ == "__main__":
    main()
