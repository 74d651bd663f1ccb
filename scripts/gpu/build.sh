#!/usr/bin/env bash
# Sourced by the GPU machine's scripts (build_and_test.sh, ab_bench.sh,
# autodiff_ab.sh), with .devdeps carried (prepare.sh): the Python packages the
# tests and benchmarks import, tess_gpu_build SRC BUILD LOG_DIR, which builds
# the targets they run from the tree SRC with CUDA into BUILD (its logs in
# LOG_DIR), and tess_ab_builds and tess_ab_rounds for a baseline and this tree
# side by side.
deps="$PWD/.devdeps/root/usr"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  "$PWD"/.devdeps/whl-tc/*.whl $(python3 -c 'import pytest' 2>/dev/null || echo "$PWD"/.devdeps/whl/*.whl)
export PYTHONPATH=/tmp/site

# tess_gpu_configure SRC BUILD LOG_DIR: configures SRC with CUDA into BUILD.
tess_gpu_configure() {
  local src=$1 build=$2 logs=$3
  cmake -S "$src" -B "$build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++-12 \
    -DCMAKE_PREFIX_PATH="$deps" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" \
    -DPython_EXECUTABLE="$(command -v python3)" -DTESS_BUILD_BENCH=OFF -DTESSCPP_CUDA=ON >"$logs/configure.log" 2>&1 \
    || { tail -30 "$logs/configure.log"; return 1; }
}

tess_gpu_build() {
  local src=$1 build=$2 logs=$3
  tess_gpu_configure "$src" "$build" "$logs" || return 1
  # Only the targets this tree defines: an A/B baseline may predate some.
  local target targets=()
  for target in _tesscpp tesscpp_cli tesscpp_cuda_tests tesscpp_cuda_internal_tests tesscpp_runtime_tests \
    tesscpp_gpu_transport_tests tesscpp_transport_seam_tests vectoradd noop bench_devhold bridge_vec bridge_nl bridge_devid \
    bridge_vmmout; do
    grep -q "^$target:" "$build/Makefile" && targets+=("$target")
  done
  make -C "$build" -j"$(nproc)" "${targets[@]}" >"$logs/build.log" 2>&1 \
    || { grep -E "error" -A3 "$logs/build.log" | head -40; return 1; }
  # The array-form example and fixture where CMake found Dr.Jit (its wheel is
  # carried): apart, so that a failure there leaves the rest to test.
  if grep -q "^burgers_array:" "$build/Makefile"; then
    make -C "$build" -j"$(nproc)" burgers_array bridge_permute_array >>"$logs/build.log" 2>&1 \
      || { echo "burgers_array or bridge_permute_array did not build:"; grep -E "error" -A3 "$logs/build.log" | head -20; }
  else
    echo "burgers_array: CMake found no Dr.Jit"
  fi
}

# tess_ab_builds NAME BUILDER: for the A/B scripts (ab_bench.sh, autodiff_ab.sh),
# with .devdeps/baseline.tar.gz written (prepare.sh --baseline REV): unpacks the
# baseline into /tmp/NAME-base and builds it and this tree at once with
# `BUILDER SRC BUILD LOG_DIR` into /tmp/NAME-base-build and /tmp/NAME-head-build
# (logs in $out/base and $out/head). A failed head build stops the other.
tess_ab_builds() {
  local name=$1 builder=$2 root=$PWD base=/tmp/$1-base base_build
  [[ -f "$root/.devdeps/baseline.tar.gz" ]] \
    || { echo "no baseline: run scripts/gpu/prepare.sh --baseline REV first" >&2; return 2; }
  rm -rf "$base" && mkdir -p "$base" "$out/base" "$out/head"
  tar -xzf "$root/.devdeps/baseline.tar.gz" -C "$base"
  "$builder" "$base" "/tmp/$name-base-build" "$out/base" &
  base_build=$!
  "$builder" "$root" "/tmp/$name-head-build" "$out/head" || { kill "$base_build" 2>/dev/null; return 1; }
  wait "$base_build" || return 1
  echo "baseline: $(cat "$root/.devdeps/baseline" 2>/dev/null || echo unknown); head: $(cat "$root/.devdeps/commit")"
}

# tess_ab_rounds NAME ROUNDS STEP: after tess_ab_builds NAME, runs
# `STEP SIDE ROUND SRC BUILD` for SIDE base and head, ROUNDS times. Who goes
# first alternates, so that neither build always meets a warmer machine.
tess_ab_rounds() {
  local name=$1 rounds=$2 step=$3 round side src
  for round in $(seq "$rounds"); do
    local order=(base head)
    ((round % 2 == 0)) && order=(head base)
    for side in "${order[@]}"; do
      src=$([[ $side == base ]] && echo "/tmp/$name-base" || echo "$PWD")
      "$step" "$side" "$round" "$src" "/tmp/$name-$side-build"
    done
  done
}
