#!/usr/bin/env bash
# What `make demo` shows. For now (foundation layer): one float64 array encoded
# and decoded in every wire encoding, with sizes and speeds. Later layers turn
# this into serve-a-component, call it, show a gradient.
set -euo pipefail
build=${1:-build/release}
echo "== tesscpp demo: the array wire codecs =="
"$build/bin/tesscpp-codec" demo --mib "${TESS_DEMO_MIB:-64}"
