#!/usr/bin/env bash
# Run on the GPU machine from the repository root, with .devdeps carried and a
# baseline written (`scripts/gpu/prepare.sh --baseline REV`): builds the
# array-form example and the Python module of the baseline and of this tree,
# runs this tree's GPU autodiff and DLPack exchange tests, then profiles the replayed VJP
# (bench/probes/drjit_gpu_profile.py), times the runtime's phases of a call
# (bench/probes/drjit_gpu_calls.py) and runs `bench/autodiff_bench.py --gpu`
# with each build, taking turns ROUNDS times, so that a change to the array
# form is measured against its baseline on one machine. Logs in $OUT.
set -uo pipefail
root=$PWD
out=${OUT:-/tmp}
rounds=${1:-2}
source "$root/scripts/gpu/build.sh"
light_build() {  # SRC BUILD LOG_DIR: only what the array form's tests and benchmark load
  tess_gpu_configure "$1" "$2" "$3" || return 1
  # permute_array where the tree has it (its GPU test; baselines before 5888a7b lack it)
  make -C "$2" -j"$(nproc)" _tesscpp tesscpp_cli burgers_array vectoradd bridge_devid \
    $(grep -q "^bridge_permute_array:" "$2/Makefile" && echo bridge_permute_array) >"$3/build.log" 2>&1 \
    || { grep -E "error" -A3 "$3/build.log" | head -30; return 1; }
}
tess_ab_builds adab light_build || exit 1
head_build=/tmp/adab-head-build
(cd "$head_build" && PYTHONPATH="$head_build/python:$PYTHONPATH" TESSCPP_EXAMPLES_DIR="$head_build/examples" \
  TESSCPP_BRIDGE_FIXTURES="$head_build/python/fixtures" TESSCPP_SOURCE_DIR="$root" TESSCPP_CLI="$head_build/bin/tesscpp" \
  timeout 300 python3 -m pytest -q -p no:cacheprovider --noconftest "$root/python/tests/test_gpu_autodiff_arrays.py" \
  "$root/python/tests/test_dlpack_exchange.py" 2>&1 | tail -5)
measure_side() {  # SIDE ROUND SRC BUILD
  local side=$1 round=$2 src=$3 build=$4
  if ((round == 1)); then
    PYTHONPATH="$build/python:$PYTHONPATH" timeout 120 python3 "$src/bench/probes/drjit_gpu_profile.py" \
      --build "$build" >"$out/profile-$side.txt" 2>&1
    echo "== profile, $side"
    grep -E "^==|busy|host CUDA calls" "$out/profile-$side.txt"
    PYTHONPATH="$build/python:$PYTHONPATH" timeout 120 python3 "$src/bench/probes/drjit_gpu_calls.py" \
      --build "$build" --cells 1000 >"$out/phases-$side.txt" 2>&1
    echo "== phases at 1e3 cells, $side"
    grep -E "median|phases" "$out/phases-$side.txt"
  fi
  PYTHONPATH="$build/python:$PYTHONPATH" timeout 200 python3 "$src/bench/autodiff_bench.py" --gpu --build "$build" \
    >"$out/bench-$side-$round.md" 2>"$out/bench-$side-$round.err"
  echo "== bench, $side, round $round"
  grep -E "^\| [0-9]" "$out/bench-$side-$round.md" || tail -5 "$out/bench-$side-$round.err"
}
tess_ab_rounds adab "$rounds" measure_side
