#!/usr/bin/env python3
"""Forward reuse (docs/forward-reuse.md, issue 57): what a training step costs
when the VJP reuses the apply's forward, against recomputing it and against
tesseract-core's peers, on one explicit 1-D viscous Burgers solver in three
forms, each sized so that one apply takes about 100 ms here:

- torch:  bench/components/burgers_torch (torch.func.vjp; tesscpp.reuse's
          torch helpers when tesscpp serves it);
- JAX:    bench/components/burgers_jax_recipe (tesseract-core's JAX recipe;
          tesscpp.reuse when tesscpp serves it, or tesseract-core's own VJP
          cache with BURGERS_JAX_VJP_CACHE=1);
- C++:    examples/burgers_ad (derived derivatives, tesscpp/autodiff.h).

A step is one train step through a bridge: apply + VJP, loss =
sum(u_next) + energy, gradients with respect to u and nu (backward in torch,
jax.jit(jax.value_and_grad(loss)) in JAX). All servers of a form run at
once and its measurements take turns round by round, so that this VM's drift
hits the rows compared alike (but for the C++ form's, whose tapes on disk
interfere; see FORMS): a first round whose answers are checked, one
untimed round more for calls under WARM_ENOUGH_S (a fresh server's first large
calls fault in memory), then --rounds timed rounds; each figure is the median.
Rows:

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
budget of RESIDUAL_ON_MIB, since the JAX form's pullback (one state per step)
outgrows the default 1 GiB at this size. The reference costs of each form are
one apply alone and one VJP alone (no reuse: forward + reverse) through the
plain client of each server, so that "reverse only" = VJP - apply, and the
goal "step <= 1.1 x (apply + reverse only)" can be read. tesscpp rows also
show the server's /metrics residual counters over the row (kept, hits, misses,
over budget); tesseract-core's cache counts nothing, so on its servers a VJP
right after an apply at the same inputs is timed too (a hit runs the reverse
pass only). json+base64, run directories on /dev/shm; the log on stderr has
every call's time.

    .venv/bin/python bench/forward_reuse_bench.py --build build/ci
    .venv/bin/python bench/forward_reuse_bench.py --build build/ci --quick   # tiny sizes, a smoke run
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
# Both JAX bridges fill the cotangents of the integer input `steps` with NaN
# cast to int64 (never used); numpy warns about the cast on every VJP.
warnings.filterwarnings("ignore", "invalid value encountered in cast", RuntimeWarning)

ROOT = Path(__file__).resolve().parents[1]
RESIDUAL_ON_MIB = 4096
CORE_CACHE_ENV = "BURGERS_JAX_VJP_CACHE"  # read by burgers_jax_recipe at import
NU, DT, DX = 0.05, 1e-4, 1e-2
GOAL = 1.1  # step <= GOAL x (apply + reverse only)
WARM_ENOUGH_S = 2.0  # a first call this long is warm-up enough
METRICS = {
    "kept": "tesscpp_residual_kept_total",
    "hit": 'tesscpp_residual_lookups_total{outcome="hit"}',
    "miss": 'tesscpp_residual_lookups_total{outcome="miss"}',
    "over budget": 'tesscpp_residual_dropped_total{reason="over_budget"}',
}


@dataclass
class Form:
    """One of the solver's three forms and its size."""

    name: str
    source: str  # a tesseract_api.py under ROOT, or a library under the build
    cells: int
    steps: int
    together: bool = True  # its servers all at once, taking turns; else one after the other


# (cells, steps): about 100 ms per apply on the 2-core development VM.
FORMS = {
    "torch": Form("torch", "bench/components/burgers_torch/tesseract_api.py", 10_000, 1_100),
    "jax": Form("JAX", "bench/components/burgers_jax_recipe/tesseract_api.py", 100_000, 1_400),
    # One server at a time: ADOL-C writes each VJP's tape (~6.5 GB here) to files,
    # and next to a second server's the kept tape went back and forth to disk (reuse
    # on measured 1.4-1.7x slower than off, against 1.04x faster with either alone).
    "cpp": Form("C++", "examples/libburgers_ad.so", 10_000, 2_500, together=False),
}
QUICK = (200, 10)


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


def plans() -> list[Plan]:
    on = {"residual_host_mb": RESIDUAL_ON_MIB}
    # Both budgets 0 turn the extension off: with only the host's 0, an apply
    # asked to keep still builds its state (a torch graph, an ADOL-C tape),
    # which the store then refuses, and "off" would pay for it.
    off = {"residual_host_mb": 0, "residual_device_mb": 0}
    core = {CORE_CACHE_ENV: "1"}
    # The reference plan of each form comes first: its answers check the others'. tesscpp's reference
    # calls go to the server with reuse off, where no kept state of a step's is being held or freed.
    return [
        Plan("torch", "tesscpp", "reuse off", ["tesscpp.torch"], True, off),
        Plan("torch", "tesscpp", "reuse on", ["tesscpp.torch"], False, on),
        Plan("torch", "tesseract-runtime", "none", ["tesseract-torch"], True),
        Plan("jax", "tesscpp", "reuse off", ["tesscpp.jax"], True, off),
        Plan("jax", "tesscpp", "reuse on", ["tesscpp.jax"], False, on),
        Plan("jax", "tesscpp", "core cache", ["tesscpp.jax"], False, on, core),
        Plan("jax", "tesseract-runtime", "none", ["tesseract-jax"], True),
        Plan("jax", "tesseract-runtime", "core cache", ["tesseract-jax"], False, {}, core),
        Plan("cpp", "tesscpp", "reuse off", ["tesscpp.torch", "tesscpp.jax"], True, off),
        Plan("cpp", "tesscpp", "reuse on", ["tesscpp.torch", "tesscpp.jax"], False, on),
    ]


@dataclass
class Problem:
    """A form's inputs at its size, and the answer once known."""

    u: np.ndarray
    steps: int
    expected: tuple[float, np.ndarray, float] | None = None  # loss, d/du, d/dnu

    def inputs(self, u: Any, nu: Any) -> dict[str, Any]:
        return {"u": u, "nu": nu, "dt": DT, "dx": DX, "steps": self.steps}

    def check(self, loss: float, grad_u: np.ndarray, grad_nu: float) -> None:
        if self.expected is None:
            return
        want_loss, want_u, want_nu = self.expected
        np.testing.assert_allclose(loss, want_loss, rtol=1e-9, err_msg="loss")
        np.testing.assert_allclose(grad_u, want_u, rtol=1e-8, atol=1e-12, err_msg="d loss / d u")
        np.testing.assert_allclose(grad_nu, want_nu, rtol=1e-8, err_msg="d loss / d nu")


@dataclass
class Row:
    plan: Plan
    bridge: str
    seconds: float = float("nan")
    counters: dict[str, float] | None = None
    error: str = ""


@dataclass
class Reference:
    apply: float
    vjp: float


def fmt_time(s: float) -> str:
    if s != s:
        return "—"
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else (f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s")


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
        u = torch.from_numpy(problem.u.copy()).requires_grad_()
        nu = torch.tensor(NU, dtype=torch.float64, requires_grad=True)
        out = apply(tesseract, problem.inputs(u, nu))
        loss = out["u_next"].sum() + out["energy"]
        loss.backward()
        return loss.item(), u.grad.numpy(), nu.grad.item()

    return step


def jax_step(apply: Callable, tesseract: Any, problem: Problem) -> Callable[[], tuple]:
    def loss(u: jax.Array, nu: jax.Array) -> jax.Array:
        out = apply(tesseract, problem.inputs(u, nu))
        return jnp.sum(out["u_next"]) + out["energy"]

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    u, nu = jnp.asarray(problem.u), jnp.asarray(NU, dtype=jnp.float64)

    def run() -> tuple:
        value, (grad_u, grad_nu) = jax.block_until_ready(step(u, nu))
        return float(value), np.asarray(grad_u), float(grad_nu)

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
        if source.suffix == ".py":
            kwargs.update(python_executable=sys.executable, python_runtime=plan.runtime)
        else:
            # A server runs in its library's directory, and ADOL-C spills the
            # tapes of a derived VJP there under fixed names (ADOLC-*_1.tap, ~7 GB
            # at the C++ form's size): a copy in a directory of its own (on disk,
            # not /dev/shm) keeps two servers from sharing them and the build
            # tree clean. Deleted after the server stops.
            workdir = Path(tempfile.mkdtemp(prefix="forward_reuse_cpp_"))
            cleanup.callback(shutil.rmtree, workdir, ignore_errors=True)
            source = Path(shutil.copy2(source, workdir))
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
                if plan.reference:
                    measures += self.reference(plan, client, label)
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
        inputs = problem.inputs(problem.u, NU)
        cotangent = {"u_next": np.ones_like(problem.u), "energy": 1.0}
        ref = Reference(float("nan"), float("nan"))
        applied: list[dict] = []

        def apply() -> tuple[float, Any]:
            return timed(lambda: client.apply(inputs), self.scratch)

        def vjp() -> tuple[float, Any]:
            return timed(
                lambda: client.vector_jacobian_product(inputs, ["u", "nu"], ["u_next", "energy"], cotangent),
                self.scratch,
            )

        def check_vjp(grads: dict) -> None:
            out = applied[0]
            answer = (float(np.sum(out["u_next"]) + out["energy"]), np.asarray(grads["u"]), float(grads["nu"]))
            if problem.expected is None:
                problem.expected = answer
            else:
                problem.check(*answer)

        def done(field_name: str) -> Callable[[float], None]:
            def store(seconds: float) -> None:
                setattr(ref, field_name, seconds)
                self.references[(plan.form, plan.runtime)] = ref

            return store

        def fail(error: BaseException) -> None:
            traceback.print_exc()
            self.failures.append(f"reference, {label}: {short(error)}")

        return [
            Measure(f"{label}: apply alone", apply, applied.append, done("apply"), fail),
            Measure(f"{label}: VJP alone", vjp, check_vjp, done("vjp"), fail),
        ]

    def probe_cache(self, plan: Plan, client: Any, label: str) -> Measure:
        """A VJP right after an apply at the same inputs (the apply untimed):
        the reverse pass alone if tesseract-core's cache hit, which nothing
        else shows."""
        problem = self.problems[plan.form]
        inputs = problem.inputs(problem.u, NU)
        cotangent = {"u_next": np.ones_like(problem.u), "energy": 1.0}

        def vjp_after_apply() -> tuple[float, Any]:
            client.apply(inputs)
            return timed(
                lambda: client.vector_jacobian_product(inputs, ["u", "nu"], ["u_next", "energy"], cotangent),
                self.scratch,
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


def header(rounds: int, quick: bool) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    revision = commit.stdout.strip() or "?"
    if dirty.stdout.strip():
        revision += " with uncommitted changes"
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line), "?")
    cores = len(os.sched_getaffinity(0))
    print(
        f"<!-- commit {revision}; {cpu}, {cores} cores; bench/forward_reuse_bench.py"
        f"{' --quick' if quick else ''} --rounds {rounds}; jax {jax.__version__}, torch {torch.__version__} -->"
    )
    print(f"# forward reuse benchmark, {time.strftime('%Y-%m-%d', time.gmtime())}")
    print()


def report(bench: Bench, rounds: int, quick: bool) -> None:
    header(rounds, quick)
    print(
        "A train step: apply + VJP through a bridge, loss = sum(u_next) + energy, gradients with respect to u "
        f"and nu; median of {rounds} steps after untimed ones, the rows of a form taking turns. Reuse on: "
        f"`tesscpp serve --residual-host-mib {RESIDUAL_ON_MIB}`; off: `--residual-host-mib 0 --residual-device-mib 0`. "
        "Core cache: tesseract-core's "
        f"`set_jax_vjp_cache_size(1)` in the module ({CORE_CACHE_ENV}=1)."
    )
    print()
    print(
        "Reference costs (plain client: tesscpp's on `tesscpp serve`, tesseract-core's SDK on "
        "tesseract-runtime; no reuse asked, so the VJP runs forward + reverse):"
    )
    print()
    print("| form | server | cells | steps | apply | VJP | reverse only (VJP − apply) | apply + reverse only |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (form, runtime), ref in bench.references.items():
        problem = bench.problems[form]
        print(
            f"| {FORMS[form].name} | {runtime} | {problem.u.size} | {problem.steps} | {fmt_time(ref.apply)} "
            f"| {fmt_time(ref.vjp)} | {fmt_time(ref.vjp - ref.apply)} | {fmt_time(ref.vjp)} |"
        )
    if bench.cache_probes:
        print()
        print(
            "tesseract-core's cache (BURGERS_JAX_VJP_CACHE=1): a VJP right after an apply at the same inputs, "
            "plain client, against the reverse only of the same server kind above (a hit runs the reverse alone; "
            "a miss, forward + reverse):"
        )
        print()
        print("| form | server | VJP right after apply | reverse only (no cache) | ratio |")
        print("| --- | --- | ---: | ---: | ---: |")
        for (form, runtime), seconds in bench.cache_probes.items():
            ref = bench.references.get((form, runtime))
            reverse = ref.vjp - ref.apply if ref else float("nan")
            print(
                f"| {FORMS[form].name} | {runtime} | {fmt_time(seconds)} | {fmt_time(reverse)} "
                f"| {ratio(seconds, reverse)} |"
            )
    print()
    print(
        "Train steps. step / (apply + reverse only): against the reference of the same form and server (goal "
        f"≤ {GOAL}). off / on: the same bridge and server with reuse off over this row. peer / this: "
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
        ref = bench.references.get((plan.form, plan.runtime))
        kept = plan.cache in ("reuse on", "core cache")  # the rows the goal is for
        to_goal = "—"
        if ref is not None:
            value = row.seconds / ref.vjp  # apply + (VJP - apply)
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
    ap.add_argument("--steps", type=int, help="the solver's time steps, every form (default: per form)")
    ap.add_argument("--quick", action="store_true", help=f"tiny sizes ({QUICK[0]} cells, {QUICK[1]} steps)")
    ap.add_argument("--forms", nargs="+", choices=sorted(FORMS), default=sorted(FORMS), help="forms to run")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import tesscpp
    import tesscpp.jax
    import tesscpp.torch

    problems = {}
    for key, form in FORMS.items():
        cells, steps = QUICK if args.quick else (form.cells, form.steps)
        u = np.random.default_rng(42).standard_normal(cells)
        problems[key] = Problem(u, args.steps or steps)
    bench = Bench(tesscpp, build, args.rounds, problems)
    try:
        for form in FORMS:
            if form in args.forms:
                form_plans = [plan for plan in plans() if plan.form == form]
                for group in [form_plans] if FORMS[form].together else [[plan] for plan in form_plans]:
                    bench.run_form(form, group)
    finally:
        shutil.rmtree(bench.scratch, ignore_errors=True)
    report(bench, args.rounds, args.quick)


if __name__ == "__main__":
    main()
