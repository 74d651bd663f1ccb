"""What from_image and `tesscpp run` ask of the engine, on the real engine.

TESSERACT_DOCKER_EXECUTABLE points at a wrapper that records each command
line and then runs docker with it (the engine does the work and answers as
always); the tests check both the recorded arguments and what the engine made
of them. On request the wrapper holds a run's published port itself, so that
the engine really finds it taken.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest

import tesscpp
from conftest import containers_of, required, run

WRAPPER = """#!{python}
# Records the engine command line, then runs docker with it. With
# TESSCPP_TAKE_PORT_ONCE naming a file that does not exist yet, the first run
# that publishes a port finds it bound here (and creates the file).
import json, os, socket, subprocess, sys

args = sys.argv[1:]
with open(os.environ["TESSCPP_ENGINE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
held = None
once = os.environ.get("TESSCPP_TAKE_PORT_ONCE")
if once and not os.path.exists(once) and args[:1] == ["run"] and "--publish" in args:
    host, port, _ = args[args.index("--publish") + 1].split(":")
    held = socket.socket()
    held.bind((host, int(port)))
    held.listen()
    open(once, "w").close()
sys.exit(subprocess.run(["docker", *args]).returncode)
"""


@pytest.fixture
def engine_log(tmp_path, monkeypatch):
    """The engine command lines run meanwhile (a list per command), read after the fact."""
    wrapper = tmp_path / "engine"
    wrapper.write_text(WRAPPER.format(python=sys.executable))
    wrapper.chmod(0o755)
    log = tmp_path / "engine.log"
    monkeypatch.setenv("TESSERACT_DOCKER_EXECUTABLE", str(wrapper))
    monkeypatch.setenv("TESSCPP_ENGINE_LOG", str(log))

    def runs() -> list[list[str]]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [args for args in map(json.loads, lines) if args[:1] == ["run"]]

    return runs


def option(args: list[str], name: str) -> list[str]:
    """Every value given to `name` in an engine command line."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]


def test_from_image_runs_as_the_caller_with_its_owner_labelled(vectoradd, engine_log):
    with tesscpp.Tesseract.from_image(vectoradd) as t:
        assert t.apply({"a": np.ones(2), "b": np.ones(2)})["result"].tolist() == [2.0, 2.0]
        attrs = json.loads(run("docker", "container", "inspect", t.container_info().name).stdout)[0]
    (args,) = engine_log()
    assert option(args, "--user") == [f"{os.getuid()}:{os.getgid()}"] == [attrs["Config"]["User"]]
    assert option(args, "--label") == [f"org.tesscpp.owner-pid={os.getpid()}"]
    assert attrs["Config"]["Labels"]["org.tesscpp.owner-pid"] == str(os.getpid())
    assert "--ipc=host" not in args and "TESSERACT_GPU_TRANSPORT=none" in option(args, "--env")


def test_an_automatic_port_found_taken_is_chosen_again(vectoradd, engine_log, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSCPP_TAKE_PORT_ONCE", str(tmp_path / "taken"))
    with tesscpp.Tesseract.from_image(vectoradd) as t:
        port = t.container_info().host_port
        assert t.health() == {"status": "ok"}
    first, second = engine_log()
    assert option(first, "--publish") != option(second, "--publish") == [f"127.0.0.1:{port}:8000"]
    assert containers_of(vectoradd) == []


def test_the_host_network_publishes_nothing(vectoradd, engine_log):
    with tesscpp.Tesseract.from_image(vectoradd, network="host") as t:
        port = t.container_info().host_port
        assert t.health() == {"status": "ok"}
        attrs = json.loads(run("docker", "container", "inspect", t.container_info().name).stdout)[0]
    (args,) = engine_log()
    assert option(args, "--network") == ["host"] and option(args, "--publish") == []
    assert args[args.index("serve") :][:3] == ["serve", "--port", str(port)]  # the server binds it
    assert attrs["HostConfig"]["NetworkMode"] == "host"


def test_cuda_ipc_asks_for_the_gpus_the_host_ipc_and_the_transport(vectoradd, engine_log):
    # This engine has no GPU runtime: it refuses the container, after being asked for it right.
    with pytest.raises(RuntimeError, match="from_image: starting a container of"):
        tesscpp.Tesseract.from_image(vectoradd, gpus=["0"], gpu_transport="cuda_ipc").serve()
    (args,) = engine_log()
    assert option(args, "--gpus") == ['"device=0"'] and "--ipc=host" in args
    assert "TESSERACT_GPU_TRANSPORT=cuda_ipc" in option(args, "--env")
    assert containers_of(vectoradd) == []


def test_tesscpp_run_hands_its_options_to_the_engine(vectoradd, engine_log, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    payload = data / "in.json"
    payload.write_text(json.dumps({"inputs": {"a": [1, 2], "b": [3, 4]}}))
    cli = required("TESSCPP_CLI")
    out = run(cli, "run", "-v", f"{data}:/extra", "-e", "MY_SETTING=on", "--user", "4321:4321",
              "--network", "none", vectoradd, "apply", "@/extra/in.json")  # fmt: skip
    assert json.loads(out.stdout)["result"]["data"]["buffer"] == [4.0, 6.0]  # it read /extra: the mount
    network = f"tesscpp-test-{uuid.uuid4().hex[:8]}"
    gpus = run(cli, "run", "--gpus", "all", "--network", network, vectoradd, "health", check=False)
    assert gpus.returncode != 0  # no GPU runtime here, and no such network
    with_options, with_gpus = engine_log()
    assert option(with_options, "--volume") == [f"{data}:/extra:ro"], with_options  # read-only unless :rw
    assert "MY_SETTING=on" in option(with_options, "--env") and option(with_options, "--user") == ["4321:4321"]
    assert option(with_options, "--network") == ["none"]
    assert option(with_gpus, "--gpus") == ["all"] and option(with_gpus, "--network") == [network]
    default_user = run(cli, "run", vectoradd, "health")
    assert json.loads(default_user.stdout) == {"status": "ok"}
    assert option(engine_log()[-1], "--user") == [f"{os.getuid()}:{os.getgid()}"]


REPLAYER = """#!/bin/sh
# Records the engine command line (one argument per line, then an empty one).
# Run by root it asks the engine and keeps the answer; run by anyone else, who
# may not reach the engine's socket, it replays root's answer to the same
# command line, and fails a command root never ran.
answers=$TESSCPP_ENGINE_ANSWERS/$(printf '%s\\n' "$@" | sha1sum | cut -c1-40)
printf '%s\\n' "$@" '' >> "$TESSCPP_ENGINE_LOG"
if [ "$(id -u)" = 0 ]; then
  docker "$@" > "$answers.out"; echo $? > "$answers.rc"
elif [ ! -f "$answers.rc" ]; then
  echo "engine replay: root never ran this command" >&2; exit 1
fi
cat "$answers.out"; exit "$(cat "$answers.rc")"
"""


def test_tesscpp_run_defaults_to_the_callers_user_not_root(vectoradd):
    """As root (this suite's user) the caller's user and a hard-coded root
    look alike, so `tesscpp run` runs once as root and once as uid 4242, gid
    4343, which is asked for 4242:4343. The second caller may not reach the
    engine's socket: it gets root's answers to the same commands, and its
    container command line (with another user) reaches no engine. from_image
    takes its default from the same function (client::CurrentUser)."""
    with tempfile.TemporaryDirectory() as folder:  # not under tmp_path, which only root may enter
        shared = Path(folder)
        shared.chmod(0o777)
        wrapper = shared / "engine"
        wrapper.write_text(REPLAYER)
        wrapper.chmod(0o755)
        (shared / "answers").mkdir(mode=0o755)
        env = {"PATH": os.environ["PATH"], "DOCKER_HOST": os.environ.get("DOCKER_HOST", ""), "HOME": folder,
               "TESSERACT_DOCKER_EXECUTABLE": str(wrapper),
               "TESSCPP_ENGINE_ANSWERS": str(shared / "answers")}  # fmt: skip
        users = {}
        for uid, gid in [(0, 0), (4242, 4343)]:
            log = shared / f"engine-{uid}.log"
            subprocess.run([required("TESSCPP_CLI"), "run", vectoradd, "health"],
                           env={**env, "TESSCPP_ENGINE_LOG": str(log)}, user=uid, group=gid, extra_groups=[],
                           capture_output=True, timeout=120, check=False)  # fmt: skip
            text = log.read_text() if log.exists() else ""
            runs = [c.splitlines() for c in text.split("\n\n") if c.startswith("run\n")]
            assert len(runs) == 1, text
            users[uid] = option(runs[0], "--user")
        assert users == {0: ["0:0"], 4242: ["4242:4343"]}


def test_the_image_declares_no_volume_and_shares_its_data_folders(vectoradd, tmp_path):
    config = json.loads(run("docker", "image", "inspect", vectoradd, "--format", "{{json .Config}}").stdout)
    assert not config.get("Volumes"), config.get("Volumes")
    # Mode 1777 (any user may write, as /tmp): the container's user is the caller's.
    made = run("docker", "create", vectoradd).stdout.strip()
    try:
        run("docker", "export", "-o", tmp_path / "fs.tar", made)
    finally:
        run("docker", "rm", made)
    import tarfile

    with tarfile.open(tmp_path / "fs.tar") as fs:
        modes = {m.name.rstrip("/"): stat.S_IMODE(m.mode) for m in fs.getmembers() if m.isdir()}
    for folder in ("tesseract/input_data", "tesseract/output_data", "tmp"):
        assert modes.get(folder) == 0o1777, (folder, oct(modes.get(folder, 0)))


def test_a_path_argument_is_mounted_when_it_names_a_file_here(vectoradd, engine_log, tmp_path):
    payload = Path(tmp_path / "payload.json")
    payload.write_text(json.dumps({"inputs": {"a": [1], "b": [2]}}))
    out = run(required("TESSCPP_CLI"), "run", vectoradd, "apply", f"@{payload}")
    assert json.loads(out.stdout)["result"]["data"]["buffer"] == [3.0]
    (args,) = engine_log()
    assert any(v.startswith(f"{payload}:") and v.endswith(":ro") for v in option(args, "--volume")), args
