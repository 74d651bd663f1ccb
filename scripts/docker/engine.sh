#!/usr/bin/env bash
# A Docker engine for the container tests, never the machine-wide one:
#   engine.sh start DIR   prints DOCKER_HOST=...: the engine DOCKER_HOST names if
#                         one answers there, else a private dockerd whose data
#                         root and log live in DIR, its exec root and socket in
#                         a short /tmp folder named after DIR (overlay2; no
#                         --privileged anywhere)
#   engine.sh start DIR --own-bridge
#                         the same, on a bridge of its own (made here, named
#                         after DIR) without iptables rules: a second engine
#                         beside one that owns docker0, e.g. a clean engine
#                         that loads a saved image. Published ports still work
#                         (docker-proxy forwards them over the bridge).
#   engine.sh stop DIR    stops the private dockerd of DIR, if one runs, and
#                         removes its own bridge if it had one
# Idempotent: a private engine already answering in DIR is reused.
set -euo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?state directory}" && cd "$2" && pwd)
own_bridge=0
[ "${3:-}" = --own-bridge ] && own_bridge=1
hash=$(printf '%s' "$dir" | sha1sum | cut -c1-12)
# Linux caps interface names at 15 bytes; the subnet comes from the same hash
# so that two such engines are unlikely to share one (10.213.0.0/16 lies
# outside the pools Docker takes its own networks from).
bridge=tcbr${hash:0:8}
subnet_octet=$((16#${hash:8:2}))
# Sockets live under a short folder of their own: a unix socket's path may
# not pass 108 bytes, and containerd's sit deep inside the exec root.
run_dir=/tmp/tesscpp-dockerd-$hash
sock="unix://$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"
# Ours alone: a folder someone else made (or a link) in /tmp could hand them
# the engine's socket, or our kill a pid of their choosing.
mkdir -p -m 700 "$run_dir"
if [ -L "$run_dir" ] || [ ! -O "$run_dir" ]; then
  echo "engine.sh: $run_dir is not a folder of this user's own" >&2
  exit 1
fi

# The pid in the pidfile, if it is a dockerd that still runs.
our_dockerd() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && echo "$pid"
}

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
    network=()
    if [ $own_bridge = 1 ]; then
      if ! ip link show "$bridge" >/dev/null 2>&1; then
        ip link add "$bridge" type bridge
        ip addr add "10.213.$subnet_octet.1/24" dev "$bridge"
      fi
      ip link set "$bridge" up
      network=(--bridge="$bridge" --iptables=false --ip-masq=false)
    fi
    setsid dockerd --data-root="$dir/data" --exec-root="$run_dir/exec" --pidfile="$pidfile" -H "$sock" \
      --storage-driver=overlay2 "${network[@]}" >"$dir/dockerd.log" 2>&1 < /dev/null &
    started=$!
    for _ in $(seq 300); do
      answers "$sock" && break
      kill -0 "$started" 2>/dev/null || break  # it died: no use waiting
      sleep 0.1
    done
    if ! answers "$sock"; then
      kill "$started" 2>/dev/null || true
      echo "engine.sh: dockerd did not answer within 30 s; its log:" >&2
      tail -20 "$dir/dockerd.log" >&2
      exit 1
    fi
  fi
  echo "DOCKER_HOST=$sock"
  ;;
stop)
  if pid=$(our_dockerd); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if pid=$(our_dockerd); then kill -9 "$pid" 2>/dev/null || true; fi  # still there after 10 s
  fi
  if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge"; fi
  # The socket folder goes too (a mount the engine left behind keeps its part).
  rm -rf "$run_dir" 2>/dev/null || true
  ;;
*) echo "usage: engine.sh start DIR [--own-bridge] | stop DIR" >&2; exit 2 ;;
esac
