#!/usr/bin/env bash
# The Python code's static checks (`make check-python`, part of `make check` and so of `make test`):
#   ruff check  on python/tesscpp, python/tests, tests/ and bench/ (rules and files: ruff.toml);
#   mypy        on the package python/tesscpp (settings: mypy.ini).
# Both come from the venv that scripts/bootstrap.sh makes (pinned in scripts/deps/requirements-dev.txt).
# Formatting is not checked (ruff.toml says why). Quiet when clean but for one summary line; on a
# failure it prints what the tools found and exits non-zero. Fix with `.venv/bin/ruff check --fix .`
# where ruff offers a fix.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin="$root/.venv/bin"

for tool in ruff mypy; do
  if [ ! -x "$bin/$tool" ]; then
    echo "check-python: $bin/$tool is missing: run scripts/bootstrap.sh (or make bootstrap)" >&2
    exit 1
  fi
done

failed=0

# The files ruff.toml selects; mypy's (python/tesscpp) are among them.
files=$("$bin/ruff" check --show-files . | wc -l)

if ! "$bin/ruff" check --quiet --no-fix .; then
  echo "check-python: ruff found the problems above (rules in ruff.toml)" >&2
  failed=1
fi

# mypy prints its findings and a closing line; keep them only when it fails.
if ! out=$("$bin/mypy" 2>&1); then
  printf '%s\n' "$out" >&2
  echo "check-python: mypy found the problems above (settings in mypy.ini)" >&2
  failed=1
fi

[ "$failed" -eq 0 ] || exit 1
echo "check-python: ruff and mypy clean ($files files)"
