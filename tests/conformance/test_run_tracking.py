"""Run tracking (docs/run-tracking.md): the oscillator logs parameters, metrics
and an artifact from apply. Ours (the C++ example on `tesscpp serve`, or with
--server-backend=tesscpp-py the Python twin on tesscpp's runtime) against the
Python twin on tesseract-runtime: the run directories file by file, and the
runs a real MLflow tracking server (`mlflow server`, started here with a local
store) records for both, queried back through MLflow's own client."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import _clean_env, _tool, free_port, python_module, start_server

INPUTS = {"inputs": {"x0": 0.5, "v0": 0.25, "omega": 2.0, "dt": 0.01, "steps": 25}}

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$")
MLFLOW_STARTUP_S = 120


@pytest.fixture
def ours(backend: str) -> str:
    if backend == "python":
        pytest.skip("compares a tesscpp backend with tesseract-runtime")
    return backend


def _apply(url: str, run_id: str, debug_body: bool = False) -> requests.Response:
    response = requests.post(f"{url}/apply", params={"run_id": run_id}, json=INPUTS, timeout=120)
    if not debug_body:
        assert response.status_code == 200, response.text
    return response


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _dirs(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())


def _metrics_without_timestamps(text: bytes) -> list[str]:
    rows = text.decode().split("\r\n")
    assert rows[0] == "timestamp,key,value,step" and rows[-1] == ""
    out = []
    for row in rows[1:-1]:
        timestamp, rest = row.split(",", 1)
        assert TIMESTAMP.match(timestamp), row
        out.append(rest)
    return out


def test_run_directory_is_written_as_tesseract_runtime_writes_it(ours, tmp_path):
    servers = [start_server(b, "oscillator", tmp_path / b) for b in (ours, "python")]
    try:
        runs = []
        for server in servers:
            _apply(server.url, "tracked")
            runs.append(server.output_path / "run_tracked")
    finally:
        for server in servers:
            server.stop()
    mine, reference = (_files(r) for r in runs)
    assert _dirs(runs[0]) == _dirs(runs[1])
    assert sorted(mine) == sorted(reference) == [
        "logs/artifacts/trajectory.csv", "logs/metrics.csv", "logs/parameters.json", "logs/tesseract.log"]  # fmt: skip
    # Byte for byte, but for the times the rows were logged at.
    assert mine["logs/parameters.json"] == reference["logs/parameters.json"]
    assert mine["logs/artifacts/trajectory.csv"] == reference["logs/artifacts/trajectory.csv"]
    assert mine["logs/tesseract.log"] == reference["logs/tesseract.log"]
    rows = _metrics_without_timestamps(mine["logs/metrics.csv"])
    assert rows == _metrics_without_timestamps(reference["logs/metrics.csv"])
    # The default step counts a key's earlier values; explicit steps are kept.
    assert [r.split(",")[0::2] for r in rows[:3]] == [["energy", "0"], ["position", "0"], ["energy", "1"]]
    assert [r for r in rows if r.startswith("position,")][-1].endswith(",20")


def _one_shot(command: list[str], output: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**_clean_env(), **env, "TESSERACT_OUTPUT_PATH": str(output), "TESSERACT_OUTPUT_FORMAT": "json+binref"}
    done = subprocess.run([*command, json.dumps(INPUTS)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=output.parent, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_one_shot_commands_write_the_output_directory_as_tesseract_runtime_does(ours, tmp_path):
    """`tesscpp apply` next to `tesseract-runtime apply`: logs/ and the binref
    file straight in the output directory (not in a run_<id>/), which is made."""
    module = python_module("oscillator")
    target = str(_tool("TESSCPP_EXAMPLES_DIR") / "liboscillator.so") if ours == "tesscpp" else str(module)
    mine = tmp_path / "ours" / "out"
    reference = tmp_path / "reference" / "out"
    mine.parent.mkdir()
    reference.parent.mkdir()
    env = {"TESSCPP_PYTHON": sys.executable}
    _one_shot([str(_tool("TESSCPP_CLI")), "apply", target], mine, env)
    runtime = str(Path(sys.executable).parent / "tesseract-runtime")
    _one_shot([runtime, "apply"], reference, {"TESSERACT_API_PATH": str(module)})
    mine_files, reference_files = _files(mine), _files(reference)
    bins = lambda files: sorted(k for k in files if k.endswith(".bin"))  # noqa: E731
    assert len(bins(mine_files)) == len(bins(reference_files)) == 1
    assert sorted(k for k in mine_files if not k.endswith(".bin")) == sorted(
        k for k in reference_files if not k.endswith(".bin")
    )
    assert mine_files[bins(mine_files)[0]] == reference_files[bins(reference_files)[0]]
    assert mine_files["logs/parameters.json"] == reference_files["logs/parameters.json"]
    assert _metrics_without_timestamps(mine_files["logs/metrics.csv"]) == _metrics_without_timestamps(
        reference_files["logs/metrics.csv"]
    )


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` (the venv's, scripts/deps/requirements-tracking.txt) on a local store."""
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    log = open(root / "server.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    process = subprocess.Popen(
        [str(mlflow), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--default-artifact-root", "mlflow-artifacts:/",
         "--artifacts-destination", str(root / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, env=_clean_env(), cwd=root, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + MLFLOW_STARTUP_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail(f"mlflow server did not start:\n{(root / 'server.log').read_text(errors='replace')[-4000:]}")
    yield url
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


def _runs(client, experiment_id: str) -> list:
    return sorted(client.search_runs([experiment_id]), key=lambda r: r.info.start_time)


def _described(client, run, scratch: Path) -> dict:
    """What a campaign's reader sees of a run, with what differs by nature left out
    (ids, times, the random run name, the program that ran)."""
    tags = {k: v for k, v in run.data.tags.items() if k not in ("mlflow.runName", "mlflow.source.name")}
    metrics = {key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
               for key in run.data.metrics}  # fmt: skip
    artifacts = {}
    for item in client.list_artifacts(run.info.run_id):
        local = client.download_artifacts(run.info.run_id, item.path, str(scratch))
        artifacts[item.path] = Path(local).read_bytes()
    return {"status": run.info.status, "user": run.info.user_id, "params": run.data.params, "tags": tags,
            "metrics": metrics, "artifacts": artifacts}  # fmt: skip


def test_mlflow_runs_are_those_tesseract_runtime_makes(ours, mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server)
    described = {}
    for backend in (ours, "python"):
        experiment = client.create_experiment(f"oscillator-{backend}-{tmp_path.name}")
        extra = f'{{"experiment_id": "{experiment}", "tags": {{"campaign": "sweep-1"}}, "description": "nightly"}}'
        settings = {"mlflow_tracking_uri": mlflow_server, "mlflow_run_extra_args": extra}
        server = start_server(backend, "oscillator", tmp_path / backend, settings=settings)
        try:
            _apply(server.url, "one")
            _apply(server.url, "two")
        finally:
            server.stop()
        runs = _runs(client, experiment)
        assert len(runs) == 2, [r.info for r in runs]  # a run per call
        described[backend] = [_described(client, r, tmp_path / f"{backend}-{i}") for i, r in enumerate(runs)]
        # Nothing in the run directory but the log: the run is MLflow's. The
        # Python host ends a module's MLflow run inside the call's capture, so
        # mlflow's "View run" lines land in the log (docs/run-tracking.md §3).
        files = _files(server.output_path / "run_one")
        assert list(files) == ["logs/tesseract.log"]
        assert [line for line in files["logs/tesseract.log"].decode().splitlines() if " View " not in line] == []
    mine, reference = described[ours], described["python"]
    assert mine == reference
    run = mine[0]
    assert run["status"] == "FINISHED"
    assert run["tags"]["campaign"] == "sweep-1" and run["tags"]["mlflow.note.content"] == "nightly"
    assert run["params"] == {"dt": "0.01", "steps": "25", "integrator": "symplectic-euler"}
    assert len(run["metrics"]["energy"]) == 25 and run["metrics"]["position"][-1][0] == 20
    assert list(run["artifacts"]) == ["trajectory.csv"]


def test_an_unreachable_tracking_server_fails_the_call_as_in_tesseract_runtime(ours, tmp_path):
    nobody = f"http://127.0.0.1:{free_port()}"
    answers = {}
    for backend in (ours, "python"):
        server = start_server(backend, "oscillator", tmp_path / backend,
                              settings={"mlflow_tracking_uri": nobody, "debug": "1"})  # fmt: skip
        try:
            answers[backend] = _apply(server.url, "lost", debug_body=True)
        finally:
            server.stop()
    expected = (f"Failed to connect to MLflow tracking server at {nobody}. Please make sure an MLflow server is "
                "running at this address and TESSERACT_MLFLOW_TRACKING_URI is set correctly.")  # fmt: skip
    for backend, answer in answers.items():
        assert answer.status_code == 500, (backend, answer.text)
        assert "RuntimeError" in answer.text and expected in answer.text, (backend, answer.text)


class _AuthProxy:
    """A reverse proxy in front of the real `mlflow server` that answers 401
    unless a request carries `required` as its Authorization header (`scope`
    "all", or "api" for MLflow's REST paths only, where mlflow's client sends
    MLFLOW_TRACKING_TOKEN; tesseract-runtime's reachability GET sends basic
    authentication only). What it forwards, MLflow answers."""

    def __init__(self, upstream: str, required: str, scope: str) -> None:
        import http.server
        import threading

        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                guarded = scope == "all" or self.path.startswith("/api/")
                if guarded and self.headers.get("Authorization") != required:
                    proxy.refused += 1
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                answer = requests.request(self.command, upstream + self.path, data=body, headers=headers, timeout=60)
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("transfer-encoding", "content-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = _forward  # noqa: N815 - http.server's names

            def log_message(self, *args) -> None:  # quiet
                pass

        self.refused = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def _campaign(backend: str, tmp_path: Path, settings: dict, env: dict, calls: int = 1) -> list[requests.Response]:
    server = start_server(backend, "oscillator", tmp_path / backend, settings={"debug": "1", **settings},
                          env_extra=env)  # fmt: skip
    try:
        return [_apply(server.url, f"call{i}", debug_body=True) for i in range(calls)]
    finally:
        server.stop()


def _both_campaigns(ours: str, tmp_path: Path, settings_for, env_for=lambda backend: {}, calls: int = 1) -> dict:
    return {b: _campaign(b, tmp_path, settings_for(b), env_for(b), calls) for b in (ours, "python")}


MLFLOW_VARIANTS = ["resume-run-id", "experiment-by-name", "experiment-by-id", "run-name", "parent-run"]


@pytest.mark.parametrize("variant", MLFLOW_VARIANTS)
def test_mlflow_settings_make_the_runs_tesseract_runtime_makes(ours, mlflow_server, tmp_path, variant):
    """docs/run-tracking.md §2, one claim each: where the run goes and what it
    is named, for ours and for tesseract-runtime, read back through MLflow."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server)
    experiments = {b: client.create_experiment(f"{variant}-{b}-{tmp_path.name}") for b in (ours, "python")}
    # The run resumed, or the parent (made by MLflow's client; not compared).
    needs_target = variant in ("resume-run-id", "parent-run")
    targets = {b: client.create_run(experiments[b]).info.run_id if needs_target else None for b in (ours, "python")}
    extra = {
        "resume-run-id": lambda b: {"run_id": targets[b]},
        "experiment-by-name": lambda b: {},
        "experiment-by-id": lambda b: {},
        "run-name": lambda b: {"experiment_id": experiments[b], "run_name": "named-run"},
        "parent-run": lambda b: {"experiment_id": experiments[b], "parent_run_id": targets[b]},
    }[variant]
    named = {b: f"created-{variant}-{b}-{tmp_path.name}" for b in (ours, "python")}
    env = {
        "experiment-by-name": lambda b: {"MLFLOW_EXPERIMENT_NAME": named[b]},
        "experiment-by-id": lambda b: {"MLFLOW_EXPERIMENT_ID": experiments[b]},
    }.get(variant, lambda b: {})
    answers = _both_campaigns(ours, tmp_path, lambda b: {"mlflow_tracking_uri": mlflow_server,
                                                         "mlflow_run_extra_args": json.dumps(extra(b))},
                              env, calls=2)  # fmt: skip
    described = {}
    for backend in (ours, "python"):
        assert [a.status_code for a in answers[backend]] == [200, 200], (backend, [a.text for a in answers[backend]])
        if variant == "experiment-by-name":  # made when missing
            experiment = client.get_experiment_by_name(named[backend]).experiment_id
        else:
            experiment = experiments[backend]
        runs = [r for r in _runs(client, experiment) if variant != "parent-run" or r.info.run_id != targets[backend]]
        described[backend] = []
        for i, r in enumerate(runs):
            run = _described(client, r, tmp_path / f"{backend}-{i}")
            run["tags"].pop("mlflow.parentRunId", None)  # each side's own parent: compared as a flag
            run["run_name"] = r.data.tags.get("mlflow.runName") if variant == "run-name" else None
            run["parent"] = r.data.tags.get("mlflow.parentRunId") == targets[backend]
            run["resumed"] = r.info.run_id == targets[backend]
            described[backend].append(run)
    assert described[ours] == described["python"]
    expected_runs = 1 if variant == "resume-run-id" else 2
    assert len(described[ours]) == expected_runs, described[ours]
    if variant == "resume-run-id":
        assert described[ours][0]["resumed"] and len(described[ours][0]["metrics"]["energy"]) == 2 * 25
    if variant == "run-name":
        assert [r["run_name"] for r in described[ours]] == ["named-run"] * 2
    if variant == "parent-run":
        assert all(r["parent"] for r in described[ours])


def test_a_call_that_mlflow_refuses_fails_and_ends_its_run_as_tesseract_runtime(ours, mlflow_server, tmp_path):
    """A resumed run that already holds the parameter dt with another value:
    MLflow refuses the call's log_parameter, the call fails (500), and the
    run is ended with the status tesseract-runtime gives it."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server)
    experiment = client.create_experiment(f"refused-{tmp_path.name}")
    targets = {}
    for backend in (ours, "python"):
        targets[backend] = client.create_run(experiment).info.run_id
        client.log_param(targets[backend], "dt", "0.5")
    resume = {b: json.dumps({"run_id": run}) for b, run in targets.items()}
    answers = _both_campaigns(ours, tmp_path, lambda b: {"mlflow_tracking_uri": mlflow_server,
                                                         "mlflow_run_extra_args": resume[b]})  # fmt: skip
    statuses = {b: client.get_run(targets[b]).info.status for b in targets}
    for backend in (ours, "python"):
        assert answers[backend][0].status_code == 500, (backend, answers[backend][0].text)
    assert statuses[ours] == statuses["python"], statuses


def test_a_file_artifact_store_receives_the_artifacts(ours, mlflow_server, tmp_path):
    """An experiment whose artifact location is file:// : both runtimes copy the
    artifact into it (no upload through the server)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server)
    stores = {b: tmp_path / f"store-{b}" for b in (ours, "python")}
    experiments = {b: client.create_experiment(f"files-{b}-{tmp_path.name}", artifact_location=stores[b].as_uri())
                   for b in (ours, "python")}  # fmt: skip
    answers = _both_campaigns(ours, tmp_path, lambda b: {"mlflow_tracking_uri": mlflow_server,
                                                         "mlflow_run_extra_args": json.dumps(
                                                             {"experiment_id": experiments[b]})})  # fmt: skip
    for backend in (ours, "python"):
        assert answers[backend][0].status_code == 200, answers[backend][0].text
        (run,) = _runs(client, experiments[backend])
        written = stores[backend] / run.info.run_id / "artifacts" / "trajectory.csv"
        assert written.is_file(), sorted(str(p) for p in stores[backend].rglob("*"))
    mine = next((stores[ours]).rglob("trajectory.csv")).read_bytes()
    assert mine == next((stores["python"]).rglob("trajectory.csv")).read_bytes()


@pytest.mark.parametrize("how", ["basic", "token"])
def test_credentials_reach_the_tracking_server(ours, mlflow_server, tmp_path, how):
    """MLFLOW_TRACKING_USERNAME/PASSWORD (basic authentication on every request,
    the reachability check included) and MLFLOW_TRACKING_TOKEN (a bearer token
    on MLflow's REST calls), through a proxy that refuses requests without
    them: with them both runtimes' calls succeed, without them both fail."""
    import base64

    required = ("Basic " + base64.b64encode(b"alice:secret").decode()) if how == "basic" else "Bearer t0ken"
    proxy = _AuthProxy(mlflow_server, required, "all" if how == "basic" else "api")
    credentials = ({"MLFLOW_TRACKING_USERNAME": "alice", "MLFLOW_TRACKING_PASSWORD": "secret"} if how == "basic"
                   else {"MLFLOW_TRACKING_TOKEN": "t0ken"})  # fmt: skip
    try:
        settings = lambda b: {"mlflow_tracking_uri": proxy.url}  # noqa: E731
        granted = _both_campaigns(ours, tmp_path / "granted", settings, lambda b: credentials)
        refused_before = proxy.refused
        refused = _both_campaigns(ours, tmp_path / "refused", settings)
    finally:
        proxy.close()
    for backend in (ours, "python"):
        assert granted[backend][0].status_code == 200, (backend, granted[backend][0].text)
        assert refused[backend][0].status_code == 500, (backend, refused[backend][0].text)
    assert proxy.refused > refused_before


def test_an_error_answer_of_the_tracking_server_is_reported_as_in_tesseract_runtime(ours, mlflow_server, tmp_path):
    """The reachability check answered 404: the call fails with tesseract-runtime's message."""
    uri = f"{mlflow_server}/no-such-page"
    answers = _both_campaigns(ours, tmp_path, lambda b: {"mlflow_tracking_uri": uri})
    messages = {}
    for backend in (ours, "python"):
        answer = answers[backend][0]
        assert answer.status_code == 500, (backend, answer.text)
        found = re.search(r"RuntimeError: (MLflow tracking server at .*? to an empty string\.)", answer.text)
        assert found, (backend, answer.text)
        messages[backend] = found.group(1)
    assert messages[ours] == messages["python"]
    assert f"{uri} returned an error response: 404 " in messages[ours]  # the server's own reason phrase follows
