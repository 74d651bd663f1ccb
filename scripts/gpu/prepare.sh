#!/usr/bin/env bash
# Run here, before using the GPU machine (the `device` tool): puts into .devdeps/
# (ignored by git, carried with `carry: [".devdeps"]`) what that machine lacks
# to build tesscpp — simdjson (Debian 12's, unpacked) — and pytest's wheels for
# its Python 3.12. Everything else tesscpp needs is installed there (Ubuntu
# 24.04: g++-12, Boost 1.83, libcurl, lz4, CLI11, GoogleTest; nanobind, torch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deps="$root/.devdeps"
mkdir -p "$deps/root" "$deps/whl"
grep -qx '/.devdeps/' "$root/.git/info/exclude" 2>/dev/null || echo '/.devdeps/' >>"$root/.git/info/exclude"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download libsimdjson-dev libsimdjson14 2>/dev/null)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$deps/root"; done
"$root/.venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$deps/whl" \
  pytest==9.2.0 pluggy iniconfig packaging pygments
du -sh "$deps"
