#!/usr/bin/env bash
# Run on the GPU machine from the repository root, with .devdeps carried (see
# prepare.sh): builds the Python module, the CLI and the bridge fixtures in
# /tmp/tesscpp-build and runs the Python tests that need a GPU. Logs go to
# $OUT when it is set.
set -euo pipefail
root=$PWD
deps="$root/.devdeps/root/usr"
out=${OUT:-/tmp}
build=/tmp/tesscpp-build
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$root"/.devdeps/whl/*.whl
  export PYTHONPATH=/tmp/site
fi
cmake -S "$root" -B "$build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++-12 \
  -DCMAKE_PREFIX_PATH="$deps" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" \
  -DPython_EXECUTABLE="$(command -v python3)" -DTESS_BUILD_BENCH=OFF >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
make -C "$build" -j"$(nproc)" _tesscpp tesscpp_cli bridge_vec bridge_nl >"$out/build.log" 2>&1 \
  || { grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd "$build"
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" TESSCPP_BRIDGE_FIXTURES="$build/python/fixtures" \
  python3 -m pytest -v -p no:cacheprovider --noconftest "$root/python/tests/test_gpu_host_path.py" "$@" 2>&1 \
  | tee "$out/pytest.log"
