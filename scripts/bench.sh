#!/usr/bin/env bash
# Runs the codec, runtime and client benchmarks and the Python stack on the same work, in one
# run, and writes the tables to bench/results/{codec,runtime,client}-<date>.md (printed too).
set -euo pipefail
build=${1:-build/release}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
results="$root/bench/results"
mkdir -p "$results"
stamp=$(date +%Y%m%d-%H%M%S)
gbench="$results/codec-$stamp.gbench.json"
python="$results/codec-$stamp.python.json"
"$build/bin/codec_benchmark" --benchmark_out="$gbench" --benchmark_out_format=json \
  --benchmark_min_time=0.5 "${@:2}"
"$root/.venv/bin/python" "$root/bench/python_codecs.py" >"$python"
{
  echo "# codec benchmarks, $(date -u +%Y-%m-%d) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
  echo
  "$root/.venv/bin/python" "$root/bench/report.py" "$gbench" "$python"
} | tee "$results/codec-$stamp.md"

# The runtime: tesscpp serve vs tesseract-runtime serve under tesseract-core's SDK, and wrk on /health.
"$root/.venv/bin/python" "$root/bench/runtime_bench.py" --cli "$build/bin/tesscpp" --examples "$build/examples" \
  | tee "$results/runtime-$stamp.md"

# The client: tesscpp's C++ client vs tesseract-core's SDK against both servers.
"$root/.venv/bin/python" "$root/bench/client_bench.py" --bench "$build/bin/client_benchmark" --cli "$build/bin/tesscpp" \
  --examples "$build/examples" | tee "$results/client-$stamp.md"

# The torch bridge: apply_tesseract forward + backward against tesseract-torch over tesseract-core,
# and against the C++ client alone.
"$root/.venv/bin/python" "$root/bench/bridge_bench.py" --build "$build" | tee "$results/bridge-$stamp.md"

# The JAX bridge: a jitted forward + backward through the custom call against tesseract-jax.
"$root/.venv/bin/python" "$root/bench/jax_bridge_bench.py" --build "$build" | tee "$results/jax-bridge-$stamp.md"

# Containers: from_image cold start and steady-state latency, tesscpp vs tesseract-core, same image.
"$root/.venv/bin/python" "$root/bench/containers_bench.py" --build "$build" | tee "$results/containers-$stamp.md"

# Serving: one client object from N threads, and the server under a slow-body attack.
"$root/.venv/bin/python" "$root/bench/concurrency_bench.py" --build "$build" | tee "$results/concurrency-$stamp.md"
"$root/.venv/bin/python" "$root/bench/overload_bench.py" --build "$build" | tee "$results/overload-$stamp.md"

# torch.vmap: a batch of applies and VJPs one after the other vs at once, and tesseract-torch's way.
"$root/.venv/bin/python" "$root/bench/vmap_bench.py" --build "$build" | tee "$results/vmap-$stamp.md"

# Derived derivatives (tesscpp/autodiff.h) against apply and against a JAX Tesseract.
"$root/.venv/bin/python" "$root/bench/autodiff_bench.py" --build "$build" | tee "$results/autodiff-$stamp.md"
