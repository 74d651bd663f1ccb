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
tess_ab_builds ab tess_gpu_build
time_side() {  # SIDE ROUND SRC BUILD
  local side=$1 round=$2 src=$3 build=$4
  PYTHONPATH="$build/python:$PYTHONPATH" python3 "$src/bench/gpu_transport_bench.py" --only tesscpp \
    --examples "$build/examples" --bench-components "$build/bench" >"$out/ab-$side-$round.log" 2>&1
  echo "== $side, round $round"
  grep -E "tesscpp .*: median" "$out/ab-$side-$round.log" || { echo "no timings:"; tail -20 "$out/ab-$side-$round.log"; }
}
tess_ab_rounds ab "$rounds" time_side
