#!/usr/bin/env bash
# Run on the GPU machine from the repository root, with .devdeps carried and
# .devdeps/baseline.tar.gz written (`scripts/gpu/prepare.sh --baseline REV`):
# builds the baseline tree and this one, then times tesscpp's cuda_ipc rows of
# bench/gpu_transport_bench.py with each build, taking turns ROUNDS times (one
# server at a time, as the benchmark runs them), so that a change is measured
# against its baseline on one machine in one session. Logs in $OUT/ab-*.log.
set -euo pipefail
root=$PWD
out=${OUT:-/tmp}
rounds=${1:-3}
source "$root/scripts/gpu/build.sh"
base=/tmp/ab-base
rm -rf "$base" && mkdir -p "$base" "$out/base" "$out/head"
[[ -f "$root/.devdeps/baseline.tar.gz" ]] || { echo "no baseline: run scripts/gpu/prepare.sh --baseline REV first" >&2; exit 2; }
tar -xzf "$root/.devdeps/baseline.tar.gz" -C "$base"
tess_gpu_build "$base" /tmp/ab-base-build "$out/base" &
base_build=$!
trap 'kill "$base_build" 2>/dev/null || true' EXIT  # a failed head build stops the other
tess_gpu_build "$root" /tmp/ab-head-build "$out/head"
wait "$base_build"
trap - EXIT
echo "baseline: $(cat "$root/.devdeps/baseline" 2>/dev/null || echo unknown); head: $(cat "$root/.devdeps/commit")"
for round in $(seq "$rounds"); do
  # Who goes first alternates, so that neither build always meets a warmer machine.
  order=(base head)
  ((round % 2 == 0)) && order=(head base)
  for side in "${order[@]}"; do
    src=$([[ $side == base ]] && echo "$base" || echo "$root")
    build=/tmp/ab-$side-build
    PYTHONPATH="$build/python:$PYTHONPATH" python3 "$src/bench/gpu_transport_bench.py" --only tesscpp \
      --examples "$build/examples" --bench-components "$build/bench" >"$out/ab-$side-$round.log" 2>&1
    echo "== $side, round $round"
    grep -E "tesscpp .*: median" "$out/ab-$side-$round.log" || { echo "no timings:"; tail -20 "$out/ab-$side-$round.log"; }
  done
done
