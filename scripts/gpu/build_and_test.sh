#!/usr/bin/env bash
# Run on the GPU machine from the repository root, with .devdeps carried (see
# prepare.sh): builds tesscpp with CUDA in /tmp/tesscpp-build, runs the C++
# CUDA tests, (with --bench) the cuda_ipc and host-to-device benchmarks, and
# the Python GPU tests. The benchmarks go first: every other process holding a
# CUDA context slows each call, so the processes on the GPU are listed before
# them and after the tests. Logs and results go to $OUT when it is set.
set -euo pipefail
root=$PWD
out=${OUT:-/tmp}
build=/tmp/tesscpp-build
bench=0
[[ "${1:-}" == "--bench" ]] && { bench=1; shift; }
source "$root/scripts/gpu/build.sh"
tess_gpu_build "$root" "$build" "$out" || exit 1
{
  # The device tool's copy of the tree may carry a .git that is not the
  # tree's own (it read an older commit "+uncommitted changes"): what
  # prepare.sh recorded comes first when there is one.
  if [[ -f "$root/.devdeps/commit" ]]; then
    echo "commit (prepare.sh): $(cat "$root/.devdeps/commit")"
  fi
  if git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
    echo "commit (git here): $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD || echo ' +uncommitted changes')"
  fi
  echo "date: $(date -u +%FT%TZ)"
  echo "gpu, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "cuda toolkit: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
  python3 - <<'PY'
import importlib, sys
print("python:", sys.version.split()[0])
for name in ("torch", "pytest", "cupy", "jax", "tesseract_core"):
    try:
        print(f"{name}:", importlib.import_module(name).__version__)
    except Exception as e:  # noqa: BLE001 - a missing one is recorded, not fatal
        print(f"{name}: not available ({type(e).__name__})")
PY
} | tee "$out/run.log"
# The C++ GPU tests: their full gtest output goes into run.log; the console
# gets each binary's summary.
gtest() {
  echo "== $*" >>"$out/run.log"
  "$@" >>"$out/run.log" 2>&1 && echo "ok: $(basename "$1")" || { echo "FAILED: $*"; status=1; }
}
status=0
gtest "$build/bin/tesscpp_cuda_tests"
gtest "$build/bin/tesscpp_cuda_internal_tests"
gtest "$build/bin/tesscpp_runtime_tests" --gtest_filter='GpuTransport*'
gtest "$build/bin/tesscpp_gpu_transport_tests"
gtest "$build/bin/tesscpp_transport_seam_tests"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/run.log" || true
cd "$build"
export PYTHONPATH="$build/python:$PYTHONPATH" TESSCPP_BRIDGE_FIXTURES="$build/python/fixtures" \
  TESSCPP_EXAMPLES_DIR="$build/examples" TESSCPP_SOURCE_DIR="$root" TESSCPP_CLI="$build/bin/tesscpp"
gpu_processes() { nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader; }
if [[ $bench == 1 ]]; then
  echo "processes on the GPU before the benchmarks: $(gpu_processes | wc -l)"
  python3 "$root/bench/gpu_transport_bench.py" --examples "$build/examples" --bench-components "$build/bench" --out "$out/gpu-bench.md" 2>&1 | tee "$out/gpu-bench.log" | tail -20
  python3 "$root/bench/h2d_bench.py" --out "$out/h2d-bench.md" 2>&1 | tail -12
  python3 "$root/bench/vmm_bench.py" --examples "$build/examples" --bench-components "$build/bench" \
    --fixtures "$build/python/fixtures" --out "$out/vmm-bench.md" 2>&1 | tee "$out/vmm-bench.log" | tail -16
fi
# -v: the log names every test and its outcome (kept in bench/results/ as the
# evidence of a GPU run); the console shows what did not pass, and the counts.
python3 -m pytest -v -p no:cacheprovider --noconftest -rs -s "$root/python/tests/test_gpu_host_path.py" \
  "$root/python/tests/test_gpu_transport.py" "$root/python/tests/test_gpu_transfer.py" "$root/python/tests/test_gpu_vmm.py" \
  "$root/python/tests/test_gpu_jax.py" "$root/python/tests/test_gpu_autodiff_arrays.py" \
  "$root/python/tests/test_gpu_forward_reuse.py" "$@" 2>&1 | tee "$out/pytest.log" | grep -v " PASSED" | tail -60 \
  || status=1
cat "$out/pytest.log" >>"$out/run.log"
echo "processes left on the GPU after the tests:"
gpu_processes
# The verdict, in the log that is kept as the run's evidence: a log whose
# status is not 0 is never cited as a passing run (scripts/check_citations.py).
echo "build_and_test.sh exit status: $status" | tee -a "$out/run.log"
exit $status
