#!/usr/bin/env bash
# `pip install ./python` into a fresh venv, then use the installed package with
# no build tree on its path: an in-process component, a served one (the CLI
# inside the wheel), the torch bridge over both, and the JAX bridge's custom
# call. torch and JAX are not dependencies of the package; the test venv's
# site-packages (with both) is put on the fresh venv's path after its own
# packages (a .pth file), so the tesscpp that imports is the installed one
# (asserted) and no second torch or JAX is installed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
examples=${TESSCPP_EXAMPLES_DIR:?set TESSCPP_EXAMPLES_DIR to the built examples}
python=${TESS_WHEEL_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
# With the ci build's compiler and flags (RelWithDebInfo, -Werror) rather than
# the wheel's Release: the same compiler command lines, so ccache answers for
# most of the build (cmake/TessOptions.cmake): 44 s instead of about 4 min on
# the 2-core machine. TESS_WHEEL_CXX is the ci build's compiler (ctest sets it).
compiler=()
[[ -n "${TESS_WHEEL_CXX:-}" ]] && compiler=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$TESS_WHEEL_CXX")
"$work/venv/bin/python" -m pip install -q --config-settings=cmake.build-type=RelWithDebInfo \
  --config-settings=cmake.define.TESS_WERROR=ON "${compiler[@]}" "$root/python" \
  2> >(grep -v '^WARNING: Location' >&2)
torch_dir=$("$python" -c 'import pathlib, torch; print(pathlib.Path(torch.__file__).parents[1])')
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$torch_dir" >"$site/zz_test_venv_torch.pth"
cd "$work"
env -u PYTHONPATH -u TESSCPP_CLI -u TESSCPP_PYTHON "$work/venv/bin/python" - "$examples" "$root" <<'PY'
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
np.testing.assert_array_equal(remote["result"], np.array([4.0, 6.0]))
print("installed tesscpp", tesscpp.__version__, "from", package, "->", remote["result"])

# A tesseract_api.py served by the wheel's runtime: its CLI execs this venv's
# Python to host the module (tesseract-core comes from the test venv's path).
module = Path(sys.argv[2]) / "tests" / "fixtures" / "python" / "vectoradd" / "tesseract_api.py"
with tesscpp.Tesseract.from_source(module) as served_module:
    np.testing.assert_array_equal(served_module.apply(inputs)["result"], remote["result"])
print("a Python module served by the installed wheel ->", remote["result"])

# The torch bridge of the installed package: the Rosenbrock function's value and
# gradient (f = (1-x)^2 + 100 (y-x^2)^2) in process and served.
import tesscpp.torch
import torch
from tesscpp.torch import apply_tesseract

assert Path(tesscpp.torch.__file__).is_relative_to(package), tesscpp.torch.__file__
univariate = examples / "libunivariate.so"
with tesscpp.Tesseract.from_source(univariate) as served:
    for t in (tesscpp.Tesseract.from_library(univariate), served):
        x = torch.tensor(1.5, requires_grad=True)
        y = torch.tensor(2.0, requires_grad=True)
        f = apply_tesseract(t, {"x": x, "y": y})["result"]
        f.backward()
        # (1-x)^2 = 0.25, y-x^2 = -0.25: f = 6.5, df/dx = 1 + 150, df/dy = -50
        assert abs(f.item() - 6.5) < 1e-5, f
        assert abs(x.grad.item() - 151.0) < 1e-4 and abs(y.grad.item() + 50.0) < 1e-4, (x.grad, y.grad)
print("torch bridge from", package, "-> f =", f.item(), "grad =", (x.grad.item(), y.grad.item()))

# The JAX bridge of the installed package: pip built it in an isolated
# environment without JAX, so its custom call was compiled against the XLA FFI
# headers in third_party/xla_ffi; the test venv's jaxlib runs it under jit.
import jax
import jax.numpy as jnp
import tesscpp.jax

assert tesscpp.jax.ffi_available(), "XLA refused the wheel's custom call"
with tesscpp.Tesseract.from_source(univariate) as served:
    before = tesscpp.jax.ffi_calls()
    f = lambda x, y: tesscpp.jax.apply_tesseract(served, {"x": x, "y": y})["result"]  # noqa: E731
    gx, gy = jax.jit(jax.grad(f, argnums=(0, 1)))(jnp.float32(1.5), jnp.float32(2.0))
    assert tesscpp.jax.ffi_calls() - before == 1, "the jitted VJP did not run the custom call"
    assert abs(float(gx) - 151.0) < 1e-4 and abs(float(gy) + 50.0) < 1e-4, (gx, gy)
print("jax bridge from", package, "-> grad =", (float(gx), float(gy)), "through the custom call")
PY

# The C++ SDK inside the wheel, the way a user with only the wheel starts:
# `tesscpp` on the venv's PATH, `tesscpp init` (the default template, whose
# derivatives are derived, then the explicit one), a build against the CMake
# package that `python -m tesscpp --cmake-dir` names, the scaffold's TestSpec,
# check-gradients (passing, then failing once the hand-written derivative is
# made wrong), and the component loaded by Tesseract.from_library and served.
export PATH="$work/venv/bin:$PATH"
[ "$(command -v tesscpp)" = "$work/venv/bin/tesscpp" ] || { echo "pip install put no tesscpp on PATH" >&2; exit 1; }
cmake_dir=$(env -u PYTHONPATH python -m tesscpp --cmake-dir)
case "$cmake_dir" in "$work"/venv/*) ;; *) echo "cmake dir outside the venv: $cmake_dir" >&2; exit 1 ;; esac
unset TESSCPP_CLI PYTHONPATH TESSCPP_PYTHON
# The wheel's CLI on a Python module, as a user runs it (python -m tesscpp names the interpreter).
module="$root/tests/fixtures/python/vectoradd/tesseract_api.py"
answer=$(cd "$work" && tesscpp apply "$module" '{"inputs": {"a": [1.0, 2.0], "b": [3.0, 4.0]}}')
case "$answer" in *'"buffer":[4.0,6.0]'*) echo "tesscpp apply tesseract_api.py -> $answer" ;;
  *) echo "the wheel's CLI on a module answered: $answer" >&2; exit 1 ;; esac
build_scaffold() {  # $1: the project's directory
  { env -u CMAKE_PREFIX_PATH cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$cmake_dir" && cmake --build "$1/build"; } >"$1.log" 2>&1 \
    || { cat "$1.log" >&2; exit 1; }
}
payload='{"inputs": {"x": [1.0, -2.0, 0.5], "scale": 1.5}}'
tesscpp init derived --dir "$work/derived"
grep -q 'autodiff::Derive(' "$work/derived/derived.cc" || { echo "the default template derives nothing" >&2; exit 1; }
build_scaffold "$work/derived"
outcome=$(cd "$work/derived" && tesscpp test "$work/derived/build/libderived.so" @test_apply.json)
[ "$outcome" = '{"status":"passed","message":"","endpoint":"apply"}' ] || { echo "TestSpec: $outcome" >&2; exit 1; }
tesscpp check-gradients "$work/derived/build/libderived.so" "$payload" --seed 1
tesscpp init heat --dir "$work/heat" --template explicit
if tesscpp init heat --dir "$work/heat" 2>/dev/null; then echo "init overwrote an existing project" >&2; exit 1; fi
build_scaffold "$work/heat"
library="$work/heat/build/libheat.so"
outcome=$(cd "$work/heat" && tesscpp test "$library" @test_apply.json)
[ "$outcome" = '{"status":"passed","message":"","endpoint":"apply"}' ] || { echo "TestSpec: $outcome" >&2; exit 1; }
tesscpp check-gradients "$library" "$payload" --seed 1
sed -i 's/2 \* in\[scale\]/3 * in[scale]/' "$work/heat/heat.cc"
grep -q '3 \* in\[scale\]' "$work/heat/heat.cc" || { echo "the scaffold's derivative was not found to edit" >&2; exit 1; }
build_scaffold "$work/heat"
status=0
tesscpp check-gradients "$library" "$payload" --seed 1 --max-failures 1 >"$work/wrong.txt" || status=$?
[ "$status" = 1 ] && grep -q "failed" "$work/wrong.txt" || { cat "$work/wrong.txt" >&2; echo "status $status" >&2; exit 1; }
cat "$work/wrong.txt"
python - "$library" <<'PY'
import sys

import numpy as np
import tesscpp

out = tesscpp.Tesseract.from_library(sys.argv[1]).apply({"x": np.array([1.0, 2.0]), "scale": 3.0})
np.testing.assert_array_equal(out["y"], [3.0, 12.0])
with tesscpp.Tesseract.from_source(sys.argv[1]) as served:
    np.testing.assert_array_equal(served.apply({"x": np.array([-1.0])})["y"], [1.0])
print("a component built against the wheel's SDK ->", out["y"])
PY
