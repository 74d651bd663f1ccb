#!/usr/bin/env bash
# What `make demo` shows: the vectoradd example (a C++ component library)
# served by `tesscpp serve`, called over HTTP by tesseract-core's own Python
# client (apply, then the Jacobian), and the same call through curl-free raw
# HTTP so the wire format is visible.
set -euo pipefail
build=${1:-build/release}
python=${PYTHON:-.venv/bin/python}
workdir=$(mktemp -d)
log="$workdir/serve.log"
"$build/bin/tesscpp" serve "$build/examples/libvectoradd.so" --port 0 --output-path "$workdir" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$workdir"' EXIT
for _ in $(seq 100); do
  grep -q "serving" "$log" && break
  sleep 0.05
done
url=$(grep -o 'http://[0-9.:]*' "$log")
echo "== $(head -1 "$log")"
"$python" - "$url" <<'PY'
import sys
import numpy as np
import requests
from tesseract_core import Tesseract

url = sys.argv[1]
print("== raw HTTP: POST /apply, Accept: application/json")
r = requests.post(f"{url}/apply", json={"inputs": {"a": [1, 2, 3], "b": [4, 5, 6], "s": 2}},
                  headers={"Accept": "application/json"})
print(r.status_code, r.headers["content-type"], r.text)

t = Tesseract.from_url(url)
print("== tesseract-core SDK: endpoints", t.available_endpoints)
a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([4.0, 5.0, 6.0], np.float32)
out = t.apply({"a": a, "b": b, "s": 2.0})
print("apply(a, b, s=2).result =", out["result"], out["result"].dtype)
jac = t.jacobian({"a": a, "b": b, "s": 2.0}, jac_inputs=["a", "s"], jac_outputs=["result"])
print("d result / d s =", jac["result"]["s"])
print("d result / d a =\n", jac["result"]["a"])
try:
    t.apply({"a": a, "b": b[:2]})
except Exception as e:  # the server's 422, rebuilt as a pydantic ValidationError
    print("bad input ->", type(e).__name__ + ":", e.errors()[0]["msg"])
PY

# The same kind of component from PyTorch: tesscpp's Python package serves the
# univariate example (the Rosenbrock function, with analytic derivatives), and
# torch.optim minimises it through tesscpp.torch.apply_tesseract (forward via
# /apply, gradients via /vector_jacobian_product). DEMO_ROSENBROCK=rosenbrock_ad
# uses the same function written once with its derivatives derived
# (examples/rosenbrock_ad, tesscpp/autodiff.h).
rosenbrock=${DEMO_ROSENBROCK:-univariate}
echo "== component: examples/$rosenbrock"
PYTHONPATH="$build/python" "$python" - "$build/examples/lib$rosenbrock.so" <<'PY'
import sys
import torch
from tesscpp import Tesseract
from tesscpp.torch import apply_tesseract

print("== PyTorch: minimise the Rosenbrock function through a served C++ component")
with Tesseract.from_source(sys.argv[1]) as rosenbrock:
    xy = torch.tensor([-1.2, 1.0], requires_grad=True)
    optimizer = torch.optim.Adam([xy], lr=0.2)
    for step in range(601):
        optimizer.zero_grad()
        loss = apply_tesseract(rosenbrock, {"x": xy[0], "y": xy[1]})["result"]
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step:3d}  loss {loss.item():10.6f}  x {xy[0].item():+.4f}  y {xy[1].item():+.4f}")
print("minimum at (1, 1); gradients came from the component's VJP endpoint")
PY
