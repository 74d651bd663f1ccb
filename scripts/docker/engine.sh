#!/usr/bin/env bash
# A Docker engine for the container tests, never the machine-wide one:
#   engine.sh start DIR   prints DOCKER_HOST=...: the engine DOCKER_HOST names if
#                         one answers there, else a private dockerd whose data
#                         root and log live in DIR, its exec root and socket in
#                         a short /tmp folder named after DIR (overlay2; no
#                         --privileged anywhere)
#   engine.sh stop DIR    stops the private dockerd of DIR, if one runs
# Idempotent: a private engine already answering in DIR is reused.
set -euo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?state directory}" && cd "$2" && pwd)
# Sockets live under a short folder of their own: a unix socket's path may
# not pass 108 bytes, and containerd's sit deep inside the exec root.
run_dir=/tmp/tesscpp-dockerd-$(printf '%s' "$dir" | sha1sum | cut -c1-12)
sock="unix://$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"

answers() { DOCKER_HOST=$1 timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "$cmd" in
start)
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then
    echo "DOCKER_HOST=$DOCKER_HOST"
    exit 0
  fi
  if ! answers "$sock"; then
    command -v dockerd >/dev/null || { echo "engine.sh: dockerd is not installed (docker.io)" >&2; exit 1; }
    mkdir -p "$dir/data" "$run_dir/exec"
    setsid dockerd --data-root="$dir/data" --exec-root="$run_dir/exec" --pidfile="$pidfile" -H "$sock" \
      --storage-driver=overlay2 >"$dir/dockerd.log" 2>&1 < /dev/null &
    for _ in $(seq 300); do
      answers "$sock" && break
      sleep 0.1
    done
    answers "$sock" || { echo "engine.sh: dockerd did not answer within 30 s; its log:" >&2; tail -20 "$dir/dockerd.log" >&2; exit 1; }
  fi
  echo "DOCKER_HOST=$sock"
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  ;;
*) echo "usage: engine.sh start|stop DIR" >&2; exit 2 ;;
esac
