#!/usr/bin/env bash
# Runs the codec benchmarks and the Python stack on the same work, in one run,
# and writes the merged table to bench/results/codec-<date>.md (printed too).
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
