"""Shared fixtures for the conformance suites (tesscpp against tesseract-core 1.15.0).

Codec suite: `codec_tool` (the tesscpp-codec binary, TESSCPP_CODEC_TOOL).

Runtime suites: `servers` starts HTTP servers for the example components and
stops them at the end of the session. Two backends serve the same examples:

  tesscpp  $TESSCPP_CLI serve $TESSCPP_EXAMPLES_DIR/lib<example>.so --port 0
  python   tesseract-runtime (tesseract-core 1.15.0, from this Python's venv)
           serving tests/fixtures/python/<example>/tesseract_api.py
  tesscpp-py  $TESSCPP_CLI serve tests/fixtures/python/<example>/tesseract_api.py --port 0:
           the same Python module on tesscpp's runtime (docs/python-host.md)

The backend under test is named on the command line for every run of a
runtime suite, `--server-backend=tesscpp` or `--server-backend=python` (CTest
passes it; nothing is taken from the environment, so a run cannot test another
backend than the one it names; write it with `=`, since `python` alone would
also be read as a path to collect); a test may also parametrize `backend` itself, or ask
`servers.get(example, backend=...)`. The differential suite always compares the backend under test
with a separate `python` reference server (`servers.reference`). Each
server gets its own temporary output and input directories and its stdout and
stderr go to files, shown in the report of every failing test that used it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
PY_FIXTURES = ROOT / "tests" / "fixtures" / "python"
# Python fixtures that define a tesscpp endpoint (docs/derivatives.md): tesscpp serves it and
# tesseract-runtime ignores it, so their documents and the requests made from them differ by
# design; they are not compared with tesseract-runtime's (python/tests/test_hvp.py tests them,
# the same module under tesseract-runtime included). Read from the modules themselves.
EXTENDED = {
    api.parent.name
    for folder in (PY_FIXTURES, ROOT / "python" / "tests" / "fixtures")
    for api in folder.glob("*/tesseract_api.py")
    if "\ndef hessian_vector_product(" in api.read_text()
}
TEST_CASES = ROOT / "tests" / "fixtures" / "test_cases"
GOLDEN_RUNTIME = ROOT / "tests" / "data" / "golden" / "runtime"

BACKENDS = ("tesscpp", "python", "tesscpp-py")
EXAMPLES = ("vectoradd", "univariate", "meshstats", "noop", "collections")

# name -> (version, description) as the C++ examples declare them (examples/*/*.cc).
# Both backends are started with these in TESSERACT_NAME/VERSION/DESCRIPTION so
# their OpenAPI `info` is comparable whatever each one's defaults are.
EXAMPLE_INFO = {
    "vectoradd": ("1.2.3", "Simple tesseract that adds two vectors.\\n"),
    "univariate": ("0.1.0", "The Rosenbrock function of two variables.\\n"),
    "meshstats": ("0.1.0", "Summary statistics of a volumetric mesh.\\n"),
    "noop": ("0.1.0", "Returns its input array unchanged.\\n"),
    "collections": ("0.1.0", "Sums a list of vectors and scales it by named weights.\\n"),
    "pyfeatures": ("0.1.0", "Python-only fixture: validators, constraints, logging.\\n"),
    # No Python twin: for tesscpp servers only.
    "burgers_ad": ("0.1.0", "Explicit steps of the 1-D viscous Burgers equation.\\n"),
}

STARTUP_TIMEOUT_S = float(os.environ.get("TESSCPP_SERVER_STARTUP_TIMEOUT", "60"))
SERVING_LINE = re.compile(r"^tesscpp: serving (?P<name>\S+) on (?P<url>http://(?P<host>[^\s:]+):(?P<port>\d+))\s*$")


def _tool(env: str, hint: str = "run these tests through ctest (make test)") -> Path:
    path = os.environ.get(env)
    if not path:
        pytest.fail(f"{env} is not set: {hint}", pytrace=False)
    return Path(path)


@pytest.fixture(scope="session")
def codec_tool() -> Path:
    """The tesscpp-codec binary built by CMake."""
    return _tool("TESSCPP_CODEC_TOOL")


def run_tool(tool: Path, *args: str) -> bytes:
    result = subprocess.run([str(tool), *args], capture_output=True, timeout=120, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{tool.name} {' '.join(args)} failed: {result.stderr.decode()}")
    return result.stdout


# --------------------------------------------------------------------------- servers


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--server-backend", choices=BACKENDS, default=None,
                     help="the server under test of the runtime suites (required by them)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "tesscpp_only: checks of the tesscpp CLI itself; skipped for the python backend")
    config.addinivalue_line("markers", "large: moves hundreds of MiB; runs by default (CI) and must never be skipped")


def live_children(pid: int) -> set[int]:
    """The live (not zombie) child processes of `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid and fields[0] not in "ZX":
            found.add(int(stat.parent.name))
    return found


def selected_backend(config: pytest.Config) -> str:
    backend = config.getoption("--server-backend")
    if backend is None:
        pytest.fail(f"name the server under test: --server-backend={'|'.join(BACKENDS)} (CTest does)", pytrace=False)
    return backend


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env() -> dict[str, str]:
    """This process's environment without any TESSERACT_* setting that could leak in."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TESSERACT_")}


@dataclass
class Server:
    backend: str
    example: str
    url: str
    output_path: Path
    input_path: Path
    env: dict[str, str]
    process: subprocess.Popen
    stdout_path: Path
    stderr_path: Path
    command: list[str]
    settings: dict[str, str] = field(default_factory=dict)

    def logs(self, limit: int = 20000) -> str:
        parts = []
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            text = path.read_text(errors="replace") if path.exists() else ""
            if len(text) > limit:
                text = f"[... {len(text) - limit} characters cut ...]\n" + text[-limit:]
            parts.append(f"--- {label} ---\n{text}")
        state = "running" if self.process.poll() is None else f"exited with {self.process.returncode}"
        return f"{' '.join(self.command)}\n({state})\n" + "\n".join(parts)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Stops the server with `sig` (SIGKILL after `timeout`) and returns its exit status.

        The server runs in a process group of its own; whatever it left running there is killed too."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.process.returncode


def python_module(example: str) -> Path:
    """The tesseract_api.py of a Python fixture (tests/fixtures/python/<example>, else python/tests/fixtures/)."""
    for folder in (PY_FIXTURES, ROOT / "python" / "tests" / "fixtures"):
        if (folder / example / "tesseract_api.py").exists():
            return folder / example / "tesseract_api.py"
    pytest.fail(f"no Python fixture named {example!r}")


def _settings_env(example: str, settings: dict[str, str]) -> dict[str, str]:
    version, description = EXAMPLE_INFO.get(example, ("0.1.0", ""))
    env = {"TESSERACT_NAME": example, "TESSERACT_VERSION": version, "TESSERACT_DESCRIPTION": description}
    for key, value in settings.items():
        env[f"TESSERACT_{key.upper()}"] = value
    return env


# How each backend says where it listens once it has bound its port: both are
# started on port 0 (the kernel picks a free one), so no other process can take
# the port between choosing it and binding it.
LISTENING_LINE = {
    "tesscpp": ("stdout", SERVING_LINE),
    "tesscpp-py": ("stdout", SERVING_LINE),
    "python": ("stderr", re.compile(r"Uvicorn running on (?P<url>http://(?P<host>[^\s:]+):(?P<port>\d+))")),
}


def answered(url: str) -> dict[str, float]:
    """Requests a tesscpp server answered with 200, per endpoint, from its /metrics
    (parsed by prometheus_client's own parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = requests.get(f"{url}/metrics", timeout=30).text
    counts: dict[str, float] = {}
    for sample in (s for f in text_string_to_metric_families(text) for s in f.samples):
        if sample.name == "tesscpp_requests_total" and sample.labels["status"] == "200":
            counts[sample.labels["endpoint"]] = counts.get(sample.labels["endpoint"], 0) + sample.value
    return counts


def _wait_for_line(server: Server, deadline: float) -> re.Match:
    stream, pattern = LISTENING_LINE[server.backend]
    path = server.stdout_path if stream == "stdout" else server.stderr_path
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        for line in text.splitlines():
            if m := pattern.search(line):
                return m
        if not server.alive():
            break
        time.sleep(0.02)
    raise AssertionError(
        f"{server.backend} server for {server.example} did not say where it listens ({pattern.pattern!r} on its "
        f"{stream}) within {STARTUP_TIMEOUT_S:.0f} s\n{server.logs()}"
    )


def _wait_for_health(server: Server, deadline: float) -> None:
    while time.monotonic() < deadline:
        if not server.alive():
            break
        try:
            if requests.get(f"{server.url}/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise AssertionError(
        f"{server.backend} server for {server.example} was not healthy within {STARTUP_TIMEOUT_S:.0f} s\n"
        + server.logs()
    )


def start_server(
    backend: str,
    example: str,
    workdir: Path,
    settings: dict[str, str] | None = None,
    cli_args: list[str] | None = None,
    env_extra: dict[str, str] | None = None,
    port: int | None = None,
) -> Server:
    """Starts a server and waits until it serves. `settings` are TESSERACT_* values (key = lower-case suffix)."""
    settings = dict(settings or {})
    output_path, input_path = workdir / "output", workdir / "input"
    output_path.mkdir(parents=True, exist_ok=True)
    input_path.mkdir(parents=True, exist_ok=True)
    env = _clean_env()
    env.update(_settings_env(example, settings))
    env.setdefault("TESSERACT_OUTPUT_PATH", str(output_path))
    env.setdefault("TESSERACT_INPUT_PATH", str(input_path))
    env.update(env_extra or {})
    output_path = Path(env["TESSERACT_OUTPUT_PATH"])
    input_path = Path(env["TESSERACT_INPUT_PATH"])

    if backend != "tesscpp":  # a Python process serves
        env["TESSERACT_DEBUGPY_PORT"] = "0"  # debug mode listens for a debugger: on a port the kernel picks
        env["PYTHONUNBUFFERED"] = "1"
    if backend == "tesscpp":
        hint = ("the tesscpp backend needs TESSCPP_CLI (the tesscpp binary) and TESSCPP_EXAMPLES_DIR (the directory "
                "holding lib<example>.so); TESSCPP_SERVER_BACKEND=python runs the suite against tesseract-runtime")
        cli = _tool("TESSCPP_CLI", hint)
        examples_dir = _tool("TESSCPP_EXAMPLES_DIR", hint)
        library = examples_dir / f"lib{example}.so"
        if not cli.exists():
            pytest.fail(f"TESSCPP_CLI={cli} does not exist: build tesscpp first", pytrace=False)
        if not library.exists():
            pytest.fail(f"{library} does not exist: TESSCPP_EXAMPLES_DIR must hold the built examples", pytrace=False)
        command = [str(cli), "serve", str(library), "--host", "127.0.0.1", "--port", str(port or 0), *(cli_args or [])]
    elif backend == "tesscpp-py":
        cli = _tool("TESSCPP_CLI", "the tesscpp-py backend needs TESSCPP_CLI (the tesscpp binary)")
        env["TESSCPP_PYTHON"] = sys.executable
        command = [str(cli), "serve", str(python_module(example)), "--host", "127.0.0.1", "--port", str(port or 0),
                   *(cli_args or [])]  # fmt: skip
    elif backend == "python":
        runtime = Path(sys.executable).parent / "tesseract-runtime"
        if not runtime.exists():
            pytest.fail(f"{runtime} does not exist: the venv needs tesseract-core[runtime]==1.15.0")
        env["TESSERACT_API_PATH"] = str(python_module(example))
        command = [str(runtime), "serve", "--host", "127.0.0.1", "--port", str(port or 0), *(cli_args or [])]
    else:
        pytest.fail(f"unknown backend {backend!r}")

    stdout_path, stderr_path = workdir / "server.stdout", workdir / "server.stderr"
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        process = subprocess.Popen(
            command, env=env, cwd=workdir, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
        )
    server = Server(backend, example, "", output_path, input_path, env, process, stdout_path, stderr_path, command,
                    settings)  # fmt: skip
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        server.url = _wait_for_line(server, deadline)["url"]
        _wait_for_health(server, deadline)
    except BaseException:
        server.stop(signal.SIGKILL)
        raise
    return server


class ServerPool:
    """Servers shared by the whole session, one per (backend, example, settings, role)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._servers: dict[tuple, Server] = {}
        self._failed: dict[tuple, str] = {}
        self._extra: list[Server] = []

    @staticmethod
    def _key(backend: str, example: str, settings: dict[str, str], role: str) -> tuple:
        return (backend, example, tuple(sorted((k, str(v)) for k, v in settings.items())), role)

    def get(self, backend: str, example: str, settings: dict[str, str], role: str) -> Server:
        key = self._key(backend, example, settings, role)
        if key in self._failed:  # do not wait for a server that could not start once already
            pytest.fail(f"(earlier start failed) {self._failed[key]}", pytrace=False)
        server = self._servers.get(key)
        if server is not None and not server.alive():
            raise AssertionError(f"a shared {backend} server for {example} has died\n{server.logs()}")
        if server is None:
            workdir = self._factory.mktemp(f"{backend}-{example}-{role}")
            try:
                server = start_server(backend, example, workdir, dict(key[2]))
            except BaseException as e:
                self._failed[key] = str(e)
                raise
            self._servers[key] = server
        return server

    def prestart(self, wanted: list[tuple[str, str, dict[str, str], str]], parallel: int = 4) -> None:
        """Starts the shared servers `wanted` ((backend, example, settings, role) each) side by side.

        A server that does not start fails the tests that use it, not the caller."""
        keys = list(dict.fromkeys(self._key(*w) for w in wanted))
        keys = [k for k in keys if k not in self._servers and k not in self._failed]
        workdirs = [self._factory.mktemp(f"{k[0]}-{k[1]}-{k[3]}") for k in keys]
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            futures = [
                pool.submit(start_server, k[0], k[1], w, dict(k[2])) for k, w in zip(keys, workdirs, strict=True)
            ]
        for key, future in zip(keys, futures, strict=True):
            try:
                self._servers[key] = future.result()
            except BaseException as e:  # noqa: BLE001 - reported by get()
                self._failed[key] = str(e)

    def fresh(self, backend: str, example: str, **kwargs) -> Server:
        server = start_server(backend, example, self._factory.mktemp(f"{backend}-{example}-fresh"), **kwargs)
        self._extra.append(server)
        return server

    def close(self) -> None:
        for server in [*self._servers.values(), *self._extra]:
            server.stop()


@pytest.fixture(scope="session")
def server_pool(tmp_path_factory: pytest.TempPathFactory):
    pool = ServerPool(tmp_path_factory)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def backend(pytestconfig: pytest.Config) -> str:
    """The backend under test (--server-backend)."""
    return selected_backend(pytestconfig)


class Servers:
    """What a test uses to get servers; remembers them so their logs show when it fails."""

    def __init__(self, pool: ServerPool, backend: str, node: pytest.Item) -> None:
        self._pool, self.backend, self._node = pool, backend, node
        self._fresh: list[Server] = []

    def _used(self, server: Server) -> Server:
        used = self._node.__dict__.setdefault("_tesscpp_servers", [])
        if server not in used:
            used.append(server)
        return server

    def get(self, example: str, backend: str | None = None, role: str = "sut", **settings: str) -> Server:
        """A shared server (started on first use) of `backend` (default: the one under test)."""
        settings = {k: str(v) for k, v in settings.items()}
        return self._used(self._pool.get(backend or self.backend, example, settings, role))

    def reference(self, example: str, **settings: str) -> Server:
        """A tesseract-runtime server, distinct from any server under test even when that is python too."""
        return self.get(example, backend="python", role="reference", **settings)

    def fresh(self, example: str, backend: str | None = None, **kwargs) -> Server:
        """A server of this test alone, stopped at its end (kwargs as `start_server`)."""
        server = self._pool.fresh(backend or self.backend, example, **kwargs)
        self._fresh.append(server)
        return self._used(server)

    def close(self) -> None:
        for server in self._fresh:
            server.stop()


@pytest.fixture
def servers(server_pool: ServerPool, backend: str, request: pytest.FixtureRequest):
    access = Servers(server_pool, backend, request.node)
    yield access
    access.close()


@pytest.fixture(autouse=True)
def _tesscpp_only(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("tesscpp_only") and selected_backend(request.config) == "python":
        pytest.skip("checks the tesscpp CLI itself (--server-backend is python)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.failed:
        for server in item.__dict__.get("_tesscpp_servers", []):
            report.sections.append((f"{server.backend} server for {server.example} ({server.url})", server.logs()))
    return report
