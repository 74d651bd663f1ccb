#!/usr/bin/env bash
# Installs everything a fresh Debian 12 machine needs to build and test tesscpp:
# the Debian packages in scripts/deps/apt.txt and a Python venv (.venv) with the
# pinned requirements. Idempotent: when everything is in place it only checks
# (dpkg-query plus a stamp hash) and returns in well under a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$root/scripts/deps"
venv="$root/.venv"

log() { printf 'bootstrap: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- Debian packages -------------------------------------------------------
mapfile -t packages < <(grep -vE '^\s*(#|$)' "$deps/apt.txt")
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q
  as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- Python venv -------------------------------------------------------------
# tesseract-torch 0.2.0 (the reference bridge the Python suite compares with)
# declares Requires-Python >= 3.12, and Debian 12 has 3.11. Its one construct
# that 3.11 cannot parse is a PEP 695 alias (`type KeyType = ...`), so on 3.11
# the wheel is installed without that check (its dependencies, torch and
# tesseract-core, are pinned above) and the alias becomes a plain assignment,
# which means the same at run time. Nothing else in it is changed.
install_tesseract_torch() {
  local spec
  spec=$(grep -vE '^\s*(#|$)' "$deps/tesseract-torch.txt")
  "$venv/bin/python" -m pip install -q --no-deps --ignore-requires-python "$spec" \
    2> >(grep -v '^WARNING: Location' >&2)
  if ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    local module
    module=$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("tesseract_torch").submodule_search_locations[0])')
    sed -i 's/^type KeyType = /KeyType = /' "$module/function.py"
  fi
  "$venv/bin/python" -c 'import tesseract_torch' || { log "tesseract-torch does not import"; exit 1; }
}

# The first python3 on PATH is used (pyenv's 3.11 on the development image,
# Debian's /usr/bin/python3 elsewhere). The stamp records the interpreter and
# the hash of every requirements file, so a change to either rebuilds the venv.
python=${TESS_PYTHON_EXE:-python3}
stamp="$venv/.tesscpp-stamp"
want=$({ "$python" -c 'import sys; print(sys.version)'; cat "$deps"/requirements-*.txt "$deps/constraints.txt" "$deps/tesseract-torch.txt"; } | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "creating Python venv in $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  reqs=()
  for f in "$deps"/requirements-*.txt; do reqs+=(-r "$f"); done
  # The development image's pip config names local package folders that may be
  # absent; pip then warns once per package. Those lines are noise, not errors.
  "$venv/bin/python" -m pip install -q --upgrade pip 2> >(grep -v '^WARNING: Location' >&2)
  "$venv/bin/python" -m pip install -q "${reqs[@]}" -c "$deps/constraints.txt" \
    2> >(grep -v '^WARNING: Location' >&2)
  install_tesseract_torch
  echo "$want" >"$stamp"
fi
