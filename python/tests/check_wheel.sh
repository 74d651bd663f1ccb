#!/usr/bin/env bash
# `pip install ./python` into a fresh venv, then use the installed package with
# no build tree on its path: an in-process component, a served one (the CLI
# inside the wheel), and the torch bridge when torch can be found.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
examples=${TESSCPP_EXAMPLES_DIR:?set TESSCPP_EXAMPLES_DIR to the built examples}
python=${TESS_WHEEL_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$root/python" 2> >(grep -v '^WARNING: Location' >&2)
cd "$work"
env -u PYTHONPATH -u TESSCPP_CLI "$work/venv/bin/python" - "$examples" <<'PY'
import sys
from pathlib import Path

import numpy as np
import tesscpp

examples = Path(sys.argv[1])
package = Path(tesscpp.__file__).parent
assert package.is_relative_to(Path(sys.prefix)), f"imported {package}, not the installed package"
inputs = {"a": np.array([1.0, 2.0], np.float32), "b": np.array([3.0, 4.0], np.float32)}
local = tesscpp.Tesseract.from_library(examples / "libvectoradd.so").apply(inputs)
with tesscpp.Tesseract.from_source(examples / "libvectoradd.so") as served:
    remote = served.apply(inputs)
np.testing.assert_array_equal(local["result"], remote["result"])
print("installed tesscpp", tesscpp.__version__, "from", package, "->", remote["result"])
PY
