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
