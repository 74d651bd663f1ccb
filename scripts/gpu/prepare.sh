#!/usr/bin/env bash
# Run here, before using the GPU machine (the `device` tool): puts into .devdeps/
# (ignored by git, carried with `carry: [".devdeps"]`) what that machine lacks
# to build tesscpp — simdjson (Debian 12's, unpacked) — pytest's wheels for
# its Python 3.12, and in whl-tc/ tesseract-core 1.15.0 (and tesseract-jax 0.4.0, and drjit 1.5.0 for
# tesscpp::autodiff_arrays) with the runtime
# dependencies its image lacks (versions as pinned in this repo's venv). Everything else tesscpp needs is installed there (Ubuntu
# 24.04: g++-12, Boost 1.83, libcurl, lz4, CLI11, GoogleTest; nanobind, torch).
#
# --baseline REV also puts REV's tree into .devdeps/baseline.tar.gz, for
# scripts/gpu/ab_bench.sh (a change timed against its baseline).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deps="$root/.devdeps"
rm -f "$deps/baseline.tar.gz" "$deps/baseline"  # a baseline is only what this run asked for
if [[ "${1:-}" == "--baseline" ]]; then
  [[ -n "${2:-}" ]] || { echo "usage: prepare.sh [--baseline REV]" >&2; exit 2; }
  mkdir -p "$deps"
  git -C "$root" archive --format=tar.gz -o "$deps/baseline.tar.gz" "$2"
  git -C "$root" rev-parse "$2" >"$deps/baseline"
fi
mkdir -p "$deps/root" "$deps/whl"
grep -qx '/.devdeps/' "$root/.git/info/exclude" 2>/dev/null || echo '/.devdeps/' >>"$root/.git/info/exclude"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download libsimdjson-dev libsimdjson14 2>/dev/null)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$deps/root"; done
"$root/.venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$deps/whl" \
  pytest==9.2.0 pluggy iniconfig packaging pygments
mkdir -p "$deps/whl-tc"
tc_wheels=(tesseract-core==1.15.0 pydantic==2.14.1 pydantic-core==2.50.1 annotated-types==0.8.0
  typing-inspection==0.4.5 fastapi==0.143.0 starlette==1.10.0 uvicorn==0.54.0 orjson==3.13.0
  pybase64==1.5.1 lz4==4.4.5 debugpy==1.8.22 typer==0.27.3 opentelemetry-api==1.45.2 tesseract-jax==0.4.0 drjit==1.5.0
  tesseract-torch==0.2.0)
"$root/.venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -d "$deps/whl-tc" "${tc_wheels[@]}"
# The commit goes with the deps too, for copies of the tree without .git
# (build_and_test.sh records it), marked when the tree has local changes.
{ git -C "$root" rev-parse HEAD | tr -d '\n'; git -C "$root" diff --quiet HEAD || echo -n " +uncommitted changes"; echo; } >"$deps/commit"
du -sh "$deps"
