#!/usr/bin/env python3
"""Records what tesseract-core 1.15.0's runtime answers, for the C++ runtime's golden tests.

For each Python fixture in tests/fixtures/python/ this starts `tesseract-runtime serve`,
sends the requests listed in CASES below and writes, under tests/data/golden/runtime/:
  <fixture>.openapi.json   GET /openapi.json
  <fixture>.cases.json     [{"name", "method", "path", "body", "accept", "status", "response"}]
The C++ tests validate the same bodies against the same schemas and must produce the same
status, the same error types and locations, and the same values.

    .venv/bin/python tests/golden/generate_runtime.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "python"
OUT = ROOT / "tests" / "data" / "golden" / "runtime"

F32_123 = {"shape": [3], "dtype": "float32", "data": {"buffer": "AACAPwAAAEAAAEBA", "encoding": "base64"}}
I64_123 = {"shape": [3], "dtype": "int64", "data": {"buffer": "AQAAAAAAAAACAAAAAAAAAAMAAAAAAAAA", "encoding": "base64"}}
I64_456 = {"shape": [3], "dtype": "int64", "data": {"buffer": "BAAAAAAAAAAFAAAAAAAAAAYAAAAAAAAA", "encoding": "base64"}}


def vectoradd_cases() -> list[tuple[str, str, dict | None]]:
    """(name, path, body) for vectoradd: valid inputs in every form, then every kind of error."""
    ok = {"a": [1, 2, 3], "b": [4, 5, 6]}
    return [
        ("apply_lists", "/apply", {"inputs": ok}),
        ("apply_base64_int64", "/apply", {"inputs": {"a": I64_123, "b": I64_456}}),
        ("apply_tagged", "/apply", {"inputs": {"a": {"object_type": "array", **F32_123}, "b": F32_123}}),
        ("apply_json_encoding", "/apply",
         {"inputs": {"a": {"shape": [3], "dtype": "int64", "data": {"buffer": [1, 2, 3], "encoding": "json"}},
                     "b": [4, 5, 6]}}),
        ("apply_normalize", "/apply", {"inputs": {**ok, "normalize": True}}),
        ("apply_s_and_normalize_lax", "/apply", {"inputs": {**ok, "s": 2, "normalize": "yes"}}),
        ("apply_broadcast_size1", "/apply", {"inputs": {"a": [1, 2, 3], "b": [10]}}),
        ("apply_s_as_list", "/apply", {"inputs": {**ok, "s": [3]}}),
        ("apply_float_inputs", "/apply", {"inputs": {"a": [0.5, 1.5, -2.25], "b": [1e-3, 2e3, 3]}}),
        ("apply_empty_vectors", "/apply", {"inputs": {"a": [], "b": []}}),
        ("bad_shape_validator", "/apply", {"inputs": {"a": [1, 2, 3], "b": [3, 4]}}),
        ("bad_missing_field", "/apply", {"inputs": {"a": [1, 2, 3]}}),
        ("bad_missing_inputs", "/apply", {}),
        ("bad_extra_field", "/apply", {"inputs": {**ok, "extra": 1}}),
        ("bad_extra_top", "/apply", {"inputs": ok, "what": {"is": "this"}}),
        ("bad_string_array", "/apply", {"inputs": {"a": "x", "b": [1]}}),
        ("bad_rank", "/apply", {"inputs": {"a": [[1]], "b": [1]}}),
        ("bad_scalar_rank", "/apply", {"inputs": {**ok, "s": [[1, 2]]}}),
        ("bad_scalar_string", "/apply", {"inputs": {**ok, "s": "abc"}}),
        ("bad_bool", "/apply", {"inputs": {**ok, "normalize": "maybe"}}),
        ("bad_bool_number", "/apply", {"inputs": {**ok, "normalize": 2}}),
        ("bad_bool_list", "/apply", {"inputs": {**ok, "normalize": [True]}}),
        ("bad_ragged", "/apply", {"inputs": {"a": [[1, 2], [3]], "b": [1, 2]}}),
        ("bad_null_array", "/apply", {"inputs": {"a": None, "b": [1, 2, 3]}}),
        ("bad_float_to_int_dtype", "/apply",
         {"inputs": {"a": {"shape": [3], "dtype": "complex64", "data": {"buffer": [1, 2, 3], "encoding": "json"}},
                     "b": [1, 2, 3]}}),
        ("bad_base64_length", "/apply",
         {"inputs": {"a": {"shape": [3], "dtype": "float64", "data": {"buffer": "AAAA", "encoding": "base64"}},
                     "b": [1, 2, 3]}}),
        ("bad_base64_chars", "/apply",
         {"inputs": {"a": {"shape": [1], "dtype": "float32", "data": {"buffer": "AA%A", "encoding": "base64"}},
                     "b": [1]}}),
        ("bad_unknown_encoding", "/apply",
         {"inputs": {"a": {"shape": [1], "dtype": "float32", "data": {"buffer": "AAAA", "encoding": "base65"}},
                     "b": [1]}}),
        ("bad_unknown_dtype", "/apply",
         {"inputs": {"a": {"shape": [1], "dtype": "float8", "data": {"buffer": "AAAA", "encoding": "base64"}},
                     "b": [1]}}),
        ("bad_arraydict_extra", "/apply",
         {"inputs": {"a": {**F32_123, "extra": 1}, "b": [1, 2, 3]}}),
        ("bad_arraydict_rank", "/apply",
         {"inputs": {"a": {"shape": [1, 3], "dtype": "float32",
                           "data": {"buffer": "AACAPwAAAEAAAEBA", "encoding": "base64"}}, "b": [1, 2, 3]}}),
        ("bad_json_fraction_for_int", "/apply",
         {"inputs": {"a": {"shape": [2], "dtype": "int64", "data": {"buffer": [1.5, 2], "encoding": "json"}},
                     "b": [1, 2]}}),
        ("bad_inputs_not_object", "/apply", {"inputs": [1, 2, 3]}),
        ("bad_body_not_object", "/apply", [1, 2]),
        ("jacobian_ok", "/jacobian", {"inputs": ok, "jac_inputs": ["s", "a"], "jac_outputs": ["result"]}),
        ("jacobian_bad_inputs", "/jacobian",
         {"inputs": ok, "jac_inputs": ["invalid", "inputs"], "jac_outputs": ["result"]}),
        ("jacobian_bad_outputs", "/jacobian",
         {"inputs": ok, "jac_inputs": ["a"], "jac_outputs": ["invalid", "outputs"]}),
        ("jacobian_empty_inputs", "/jacobian", {"inputs": ok, "jac_inputs": [], "jac_outputs": ["result"]}),
        ("jacobian_duplicate_inputs", "/jacobian", {"inputs": ok, "jac_inputs": ["a", "a"], "jac_outputs": ["result"]}),
        ("jacobian_inputs_not_list", "/jacobian", {"inputs": ok, "jac_inputs": "a", "jac_outputs": ["result"]}),
        ("jacobian_missing", "/jacobian", {"inputs": ok}),
    ]


def univariate_cases() -> list[tuple[str, str, dict | None]]:
    return [
        ("apply_defaults", "/apply", {"inputs": {}}),
        ("apply_x1_y2", "/apply", {"inputs": {"x": 1.0, "y": 2.0}}),
        ("apply_int_inputs", "/apply", {"inputs": {"x": 1, "y": 2, "a": 2, "b": 50}}),
        ("jacobian_x", "/jacobian", {"inputs": {"x": 0.0, "y": 0.0}, "jac_inputs": ["x"], "jac_outputs": ["result"]}),
        ("jacobian_xy", "/jacobian",
         {"inputs": {"x": 1.0, "y": 2.0}, "jac_inputs": ["x", "y"], "jac_outputs": ["result"]}),
        ("jvp", "/jacobian_vector_product",
         {"inputs": {"x": 0.0, "y": 0.0}, "jvp_inputs": ["x", "y"], "jvp_outputs": ["result"],
          "tangent_vector": {"x": 1.0, "y": 0.0}}),
        ("vjp", "/vector_jacobian_product",
         {"inputs": {"x": 0.0, "y": 0.0}, "vjp_inputs": ["x", "y"], "vjp_outputs": ["result"],
          "cotangent_vector": {"result": 1.0}}),
        ("abstract_eval", "/abstract_eval",
         {"inputs": {"x": {"shape": [], "dtype": "float32"}, "y": {"shape": [], "dtype": "float32"}}}),
        ("bad_jac_path", "/jacobian", {"inputs": {}, "jac_inputs": ["hey"], "jac_outputs": ["result"]}),
        ("bad_not_differentiable", "/jacobian", {"inputs": {}, "jac_inputs": ["a"], "jac_outputs": ["result"]}),
        ("bad_jvp_missing_tangent", "/jacobian_vector_product",
         {"inputs": {}, "jvp_inputs": ["x"], "jvp_outputs": ["result"]}),
        ("bad_jvp_tangent_keys", "/jacobian_vector_product",
         {"inputs": {}, "jvp_inputs": ["x"], "jvp_outputs": ["result"], "tangent_vector": {"y": 1.0}}),
        ("bad_vjp_cotangent_shape", "/vector_jacobian_product",
         {"inputs": {}, "vjp_inputs": ["x"], "vjp_outputs": ["result"], "cotangent_vector": {"result": [1.0, 2.0]}}),
        ("bad_abstract_shape", "/abstract_eval", {"inputs": {"x": {"shape": [2], "dtype": "float32"}}}),
        ("bad_x_string", "/apply", {"inputs": {"x": "one"}}),
        ("bad_x_list", "/apply", {"inputs": {"x": [1.0, 2.0]}}),
    ]


def meshstats_inputs(first_point: list[float]) -> dict:
    points = [first_point, [1, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 1]]
    return {
        "mesh": {
            "n_points": 5,
            "n_cells": 2,
            "points": points,
            "num_points_per_cell": [4, 4],
            "cell_connectivity": [0, 1, 2, 3, 1, 2, 3, 4],
            "cell_data": {"temperature": [[100, 105], [110, 115]], "pressure": [[1, 1.2], [1.1, 1.3]]},
            "point_data": {"displacement": [[0.0, 0.1, 0.2]] * 5, "velocity": [[1.0, 0.0, 0.0]] * 5},
        }
    }


def meshstats_cases() -> list[tuple[str, str, dict | None]]:
    good = meshstats_inputs([0, 666, 0])
    bad_cells = json.loads(json.dumps(good))
    bad_cells["mesh"]["n_cells"] = 3
    bad_dict = json.loads(json.dumps(good))
    bad_dict["mesh"]["cell_data"]["temperature"] = [1, 2, 3]
    bad_nested = json.loads(json.dumps(good))
    bad_nested["mesh"]["points"] = [[0, 1], [2, 3]]
    not_model = {"mesh": [1, 2, 3]}
    bad_int = json.loads(json.dumps(good))
    bad_int["mesh"]["n_points"] = 5.5
    lax_int = json.loads(json.dumps(good))
    lax_int["mesh"]["n_points"] = "5"
    lax_int["mesh"]["n_cells"] = 2.0
    return [
        ("apply", "/apply", {"inputs": good}),
        ("apply_123", "/apply", {"inputs": meshstats_inputs([0, 123, 0])}),
        ("apply_lax_ints", "/apply", {"inputs": lax_int}),
        ("jacobian", "/jacobian",
         {"inputs": good, "jac_inputs": ["mesh.points"], "jac_outputs": ["statistics.barycenter"]}),
        ("abstract_eval", "/abstract_eval", {"inputs": {"mesh": {
            "n_points": 5, "n_cells": 2,
            "points": {"shape": [5, 3], "dtype": "float32"},
            "num_points_per_cell": {"shape": [2], "dtype": "float32"},
            "cell_connectivity": {"shape": [8], "dtype": "int32"},
            "cell_data": {"temperature": {"shape": [2, 2], "dtype": "float32"}},
            "point_data": {"velocity": {"shape": [5, 3], "dtype": "float32"}}}}}),
        ("bad_validator", "/apply", {"inputs": bad_cells}),
        ("bad_dict_value", "/apply", {"inputs": bad_dict}),
        ("bad_nested_shape", "/apply", {"inputs": bad_nested}),
        ("bad_not_model", "/apply", {"inputs": not_model}),
        ("bad_int_fraction", "/apply", {"inputs": bad_int}),
        ("bad_jac_inputs", "/jacobian",
         {"inputs": good, "jac_inputs": ["mesh.cell_data"], "jac_outputs": ["statistics.barycenter"]}),
    ]


def noop_cases() -> list[tuple[str, str, dict | None]]:
    return [
        ("apply_list", "/apply", {"inputs": {"x": [1.5, 2.5]}}),
        ("apply_int_matrix", "/apply", {"inputs": {"x": [[1, 2], [3, 4]]}}),
        ("apply_base64", "/apply", {"inputs": {"x": F32_123}}),
        ("apply_scalar", "/apply", {"inputs": {"x": 7}}),
        ("apply_bool", "/apply", {"inputs": {"x": [True, False]}}),
    ]


FIXTURES_CASES = {
    "vectoradd": vectoradd_cases,
    "univariate": univariate_cases,
    "meshstats": meshstats_cases,
    "noop": noop_cases,
}

ACCEPTS = ["application/json", "application/json+base64"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record(fixture: str) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(
            os.environ,
            TESSERACT_API_PATH=str(FIXTURES / fixture / "tesseract_api.py"),
            TESSERACT_NAME=fixture,
            TESSERACT_OUTPUT_PATH=scratch,
        )
        runtime = Path(sys.executable).parent / "tesseract-runtime"
        server = subprocess.Popen(
            [str(runtime), "serve", "--port", str(port)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    requests.get(f"{base}/health", timeout=1)
                    break
                except requests.ConnectionError:
                    time.sleep(0.05)
            openapi = requests.get(f"{base}/openapi.json", timeout=30).json()
            (OUT / f"{fixture}.openapi.json").write_text(json.dumps(openapi, indent=1) + "\n")
            cases = []
            for name, path, body in FIXTURES_CASES[fixture]():
                for accept in ACCEPTS:
                    r = requests.post(f"{base}{path}", json=body, headers={"Accept": accept}, timeout=60)
                    try:
                        response = r.json()
                    except ValueError:
                        response = r.text
                    cases.append({
                        "name": name, "method": "POST", "path": path, "body": body, "accept": accept,
                        "status": r.status_code, "content_type": r.headers.get("content-type"),
                        "response": response,
                    })
                    if r.status_code != 200:
                        break  # errors do not depend on the output format
        finally:
            server.terminate()
            server.wait(timeout=30)
    (OUT / f"{fixture}.cases.json").write_text(json.dumps(cases, indent=1) + "\n")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for fixture in FIXTURES_CASES:
        record(fixture)
        print(f"recorded {fixture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
