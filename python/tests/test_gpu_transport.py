"""The cuda_ipc GPU transport between processes.

Needs a CUDA device and the tesscpp package built with CUDA (skipped
otherwise); the interoperability cases also need tesseract-core 1.15 (skipped
without it). Runs under `make test` (ctest's python_bridge) wherever a GPU is, and
alone with `pytest --noconftest python/tests/test_gpu_transport.py` and
TESSCPP_EXAMPLES_DIR (libnoop.so), TESSCPP_BRIDGE_FIXTURES (libdevid.so) and
TESSCPP_SOURCE_DIR set, as scripts/gpu/build_and_test.sh does.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
import warnings
from pathlib import Path

import pytest
import torch

import tesscpp
import tesscpp.cuda
from leaks import leak_bound
from tesscpp.torch import apply_tesseract

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SOURCE = Path(os.environ.get("TESSCPP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
NOOP_PY = SOURCE / "tests" / "fixtures" / "python" / "noop" / "tesseract_api.py"
DEVID_PY = SOURCE / "python" / "tests" / "fixtures" / "devid" / "tesseract_api.py"

try:
    import tesseract_core
except ImportError:
    tesseract_core = None
needs_tesseract_core = pytest.mark.skipif(tesseract_core is None, reason="needs tesseract-core 1.15")


def example(name: str) -> Path:
    return Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / f"lib{name}.so"


def fixture(name: str) -> Path:
    return Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / f"lib{name}.so"


def served(path: Path, **kwargs) -> tesscpp.Tesseract:
    t = tesscpp.Tesseract.from_source(path, gpu_transport="cuda_ipc", **kwargs)
    t.serve()
    return t


def _component(name: str, form: str) -> Path:
    """The C++ library of a fixture, or its Python twin (on tesscpp's runtime);
    the latter needs tesseract-core."""
    if form == "cpp":
        return example(name) if name == "noop" else fixture(name)
    if tesseract_core is None:
        pytest.skip("Python modules on tesscpp's runtime need tesseract-core 1.15")
    return NOOP_PY if name == "noop" else SOURCE / "python" / "tests" / "fixtures" / name / "tesseract_api.py"


# Every case that takes `noop` runs against the C++ component and against the
# same Python module served by tesscpp's runtime (docs/python-host.md).
@pytest.fixture(scope="module", params=["cpp", "py"], ids=["noop.so", "noop.py"])
def noop(request):
    t = served(_component("noop", request.param))
    yield t
    t.teardown()


def on_device(value) -> torch.Tensor:
    out = torch.from_dlpack(value)
    assert out.device.type == "cuda"
    return out


DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.complex128,
]


def random_tensor(shape, dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, device="cuda") > 0.5
    if dtype.is_complex or dtype.is_floating_point:
        return torch.randn(shape, device="cuda", dtype=dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, device="cuda", dtype=dtype)


def test_the_transport_is_found_to_work(noop):
    assert noop.server_capabilities.gpu_transports == ("none", "cuda_ipc")
    assert noop.resolve_gpu_transport() == "cuda_ipc"
    # A Tesseract that asks for nothing finds it too, without a warning.
    plain = tesscpp.Tesseract.from_url(noop._url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plain.resolve_gpu_transport() == "cuda_ipc"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (3,), (0, 3), (1000,), (257, 129), ((1 << 20) + 7,)])
def test_round_trip(noop, dtype, shape):
    x = random_tensor(shape, dtype)
    y = on_device(noop.apply({"x": x})["x"])
    assert y.dtype == x.dtype and y.shape == x.shape
    assert torch.equal(y, x)
    if x.numel():
        assert y.data_ptr() != x.data_ptr()  # the server returned its own copy


def test_tensors_inside_an_allocation(noop):
    # The caching allocator hands out slices of one cudaMalloc segment: each
    # descriptor must carry its own offset.
    big = torch.arange(100_000, dtype=torch.float32, device="cuda")
    for offset in (1, 17, 1024, 4096, 77_777):
        x = big[offset : offset + 500]
        assert torch.equal(on_device(noop.apply({"x": x})["x"]), x)
    strided = big[:10_000].view(100, 100).t()  # not contiguous: made so on the device
    assert torch.equal(on_device(noop.apply({"x": strided})["x"]), strided)


def _cuda_runtime():
    """The CUDA runtime library torch uses, for calls torch does not expose.

    Looked up by its soname first (torch has loaded it, so the loader finds it
    whatever its folder), then where the loader, the CUDA toolkit and NVIDIA's
    wheels keep it; a test that needs it and finds none skips, naming what it
    tried.
    """
    import ctypes
    import ctypes.util
    import glob

    torch.cuda.init()
    major = (torch.version.cuda or "").split(".")[0]
    candidates = [f"libcudart.so.{major}", ctypes.util.find_library("cudart")]
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            candidates += sorted(glob.glob(f"{root}/lib64/libcudart.so.{major}*"))
    for entry in sys.path:
        candidates += sorted(glob.glob(f"{entry}/nvidia/*/lib/libcudart.so.{major}*"))
    for candidate in filter(None, candidates):
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    pytest.skip(f"no CUDA runtime library found (tried {[c for c in candidates if c]})")


def test_memory_that_legacy_ipc_cannot_name_is_staged(noop):
    # Stream-ordered pool memory (cudaMallocAsync) refuses IPC handles.
    import ctypes

    cudart = _cuda_runtime()
    ptr = ctypes.c_void_p()
    assert cudart.cudaMallocAsync(ctypes.byref(ptr), ctypes.c_size_t(4096), None) == 0
    assert cudart.cudaStreamSynchronize(None) == 0
    try:
        source = torch.arange(1024, dtype=torch.float32, device="cuda")
        assert cudart.cudaMemcpy(ptr, ctypes.c_void_p(source.data_ptr()), ctypes.c_size_t(4096), 3) == 0

        class Pooled:  # a CAI producer over the pool memory
            __cuda_array_interface__ = {"shape": (1024,), "typestr": "<f4", "data": (ptr.value, False), "version": 3}

        x = torch.as_tensor(Pooled(), device="cuda")
        assert torch.equal(on_device(noop.apply({"x": x})["x"]), source)
    finally:
        cudart.cudaFreeAsync(ptr, None)
        cudart.cudaStreamSynchronize(None)


def _pending_fill(n: int, value: float, spin_cycles: int = 40_000_000) -> tuple[torch.Tensor, torch.cuda.Stream]:
    """A tensor that a side stream fills with `value` after spinning (40 M
    cycles: ~20 ms): its bytes are not ready when this returns."""
    x = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(spin_cycles)
        x.fill_(value)
    return x, side


class CaiView:
    """A producer that offers only the CUDA array interface, as Numba does."""

    def __init__(self, tensor: torch.Tensor, version: int, stream=None, **overrides):
        self.tensor = tensor
        cai = dict(tensor.__cuda_array_interface__, version=version, **overrides)
        cai.pop("stream", None)
        if stream is not None:
            cai["stream"] = stream
        self.__cuda_array_interface__ = cai


def test_cuda_array_interface_producers(noop):
    # Version 2 names no stream: one defensive device synchronisation.
    x, _ = _pending_fill(1 << 16, 5.0)
    assert torch.equal(torch.from_dlpack(noop.apply({"x": CaiView(x, 2)})["x"]), torch.full_like(x, 5.0))
    # Version 3 with the producer's stream: that stream is waited for.
    x, side = _pending_fill(1 << 16, 6.0)
    assert torch.equal(
        torch.from_dlpack(noop.apply({"x": CaiView(x, 3, side.cuda_stream)})["x"]), torch.full_like(x, 6.0)
    )
    # In-process, the component sees the producer's own memory.
    local = tesscpp.Tesseract.from_library(example("noop"), gpu_transport="cuda_ipc")
    y = torch.arange(8, dtype=torch.int32, device="cuda")
    out = local.apply({"x": CaiView(y, 3)})["x"]
    assert out.__cuda_array_interface__["data"][0] == y.data_ptr()
    # In-process, a named stream orders tesscpp's consumer stream on the GPU:
    # the call does not wait for the producer, and the default stream sees its
    # writes.
    z, side = _pending_fill(1 << 16, 7.0, spin_cycles=_LONG_SPIN)
    out = local.apply({"x": CaiView(z, 3, side.cuda_stream)})["x"]
    assert not side.query(), "the call waited for the producer's stream"
    assert torch.equal(torch.from_dlpack(out), torch.full_like(z, 7.0))
    # Refused with the field named: stream 0, strided views.
    with pytest.raises(TypeError, match="x: .*stream 0"):
        noop.apply({"x": CaiView(y, 3, 0)})
    with pytest.raises(TypeError, match="x: .*C-contiguous"):
        noop.apply({"x": CaiView(y, 3, strides=(8,), shape=(4,))})


def test_forbidden_implicit_host_copies(monkeypatch, noop):
    """TESSERACT_FORBID_DEVICE_HOST_COPY refuses copies nobody asked for, as
    tesseract-core does; explicit ones stay allowed."""
    monkeypatch.setenv("TESSERACT_FORBID_DEVICE_HOST_COPY", "1")
    x = torch.ones(4, device="cuda")
    out = noop.apply({"x": x})["x"]  # by handle: no host copy anywhere
    with pytest.raises(RuntimeError, match=r"Implicit device-to-host copy .*FORBID_DEVICE_HOST_COPY is set"):
        out.__array__()
    assert (out.copy_to_host() == 1).all()
    host_path = tesscpp.Tesseract.from_url(noop._url).with_encoding(gpu_transport="none")
    with pytest.raises(RuntimeError, match="FORBID_DEVICE_HOST_COPY is set"):
        host_path.apply({"x": x})
    with pytest.raises(RuntimeError, match="FORBID_DEVICE_HOST_COPY is set"):
        tesscpp.Tesseract.from_library(example("noop")).apply({"x": x})
    monkeypatch.setenv("TESSERACT_FORBID_DEVICE_HOST_COPY", "0")
    assert (host_path.apply({"x": x})["x"] == 1).all()


def test_churn(noop):
    """10 000 calls: results stay right and device memory does not grow."""
    sizes = [1, 100, 4096, 65_536, 1 << 20]
    for i in range(200):  # warm the pools and the mapping cache
        noop.apply({"x": torch.full((sizes[i % 5],), float(i), device="cuda")})
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    for i in range(10_000):
        x = torch.full((sizes[i % 5],), float(i), device="cuda")
        y = on_device(noop.apply({"x": x})["x"])
        if i % 97 == 0:
            assert torch.equal(y, x), i
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    growth = free_before - free_after
    print(f"churn: device memory in use grew by {growth / 2**20:.1f} MiB over 10000 calls")
    assert growth < leak_bound([4 * sizes[i % 5] for i in range(10_000)])


def test_returned_arrays_are_adopted_without_copies(noop):
    out = noop.apply({"x": torch.arange(1000, dtype=torch.float32, device="cuda")})["x"]
    assert isinstance(out, tesscpp.DeviceArray)
    cai = out.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (1000,) and "stream" not in cai
    pointer = cai["data"][0]
    assert torch.from_dlpack(out).data_ptr() == pointer
    # DLPack 1.x consumers get a versioned capsule, older ones the legacy one.
    import ctypes

    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(out.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert name(out.__dlpack__()) == b"dltensor"
    assert (out.copy_to_host() == torch.arange(1000, dtype=torch.float32).numpy()).all()


FRAMEWORKS = ["torch", "cupy", "jax"]


def _framework(name: str):
    """The framework's module; a missing optional one skips the test, saying which."""
    return torch if name == "torch" else pytest.importorskip(name, reason=f"{name} is not installed here")


def _framework_array(name: str):
    """A CUDA float32 array of 0..9 made by the framework, and its data pointer."""
    module = _framework(name)
    if name == "torch":
        x = torch.arange(10, dtype=torch.float32, device="cuda")
        return x, x.data_ptr()
    if name == "cupy":
        x = module.arange(10, dtype=module.float32)
        return x, x.data.ptr
    x = module.numpy.arange(10, dtype=module.numpy.float32)
    return x, x.unsafe_buffer_pointer()


@pytest.mark.parametrize("framework", ["cupy", "jax"])
def test_returned_arrays_are_adopted_by_other_frameworks_without_copies(noop, framework):
    module = _framework(framework)
    out = noop.apply({"x": torch.arange(1000, dtype=torch.float32, device="cuda")})["x"]
    pointer = out.__cuda_array_interface__["data"][0]
    if framework == "cupy":
        assert module.asarray(out).data.ptr == pointer
        assert module.from_dlpack(out).data.ptr == pointer
    else:
        assert module.dlpack.from_dlpack(out).unsafe_buffer_pointer() == pointer


# ~0.1 s of spinning: far longer than an in-process call.
_LONG_SPIN = 200_000_000


def test_in_process_dlpack_inputs_are_ordered_on_the_gpu():
    """A torch tensor still being written on the caller's current stream
    reaches an in-process component through __dlpack__(stream=1): torch makes
    the legacy default stream (tesscpp's consumer stream) wait for its stream
    on the GPU, so the call returns before the writer is done and work on the
    default stream sees the written values."""
    local = tesscpp.Tesseract.from_library(example("noop"), gpu_transport="cuda_ipc")
    x, side = _pending_fill(1 << 20, 3.0, spin_cycles=_LONG_SPIN)
    with torch.cuda.stream(side):
        out = local.apply({"x": x})["x"]
        still_writing = not side.query()
    assert out.__cuda_array_interface__["data"][0] == x.data_ptr()
    assert still_writing, "the call waited for the producer's stream"
    assert torch.equal(torch.from_dlpack(out), torch.full_like(x, 3.0))


def test_ipc_events_order_pending_producers_between_processes(noop):
    """Between tesscpp ends (docs/gpu-transport-protocol.md 12) the server's work on the
    input waits on the GPU for the client's event, and the call returns once
    the server's event is done: a producer still spinning on the default
    stream, or on a side stream, is read whole. The client waits for that
    event, never for its whole device: work on an unrelated stream, queued
    before the calls and longer than both, is still running when they return
    (a cudaDeviceSynchronize fallback would have waited for it). The
    server's own device is out of this test's sight."""
    noop.apply({"x": torch.ones(4, device="cuda")})  # the server has said that it waits for events
    unrelated, side = torch.cuda.Stream(), torch.cuda.Stream()
    x, y = torch.zeros(1 << 22, device="cuda"), torch.zeros(1 << 22, device="cuda")

    def pending_calls() -> tuple[object, object, bool]:
        """Both calls behind pending producers; whether `unrelated` was still
        running after each."""
        torch.cuda.synchronize()
        with torch.cuda.stream(unrelated):
            torch.cuda._sleep(6 * _LONG_SPIN)
        torch.cuda._sleep(_LONG_SPIN)
        x.fill_(9.0)
        out_x = noop.apply({"x": x})["x"]
        running = not unrelated.query()
        with torch.cuda.stream(side):
            torch.cuda._sleep(_LONG_SPIN)
            y.fill_(8.0)
            out_y = noop.apply({"x": y})["x"]  # out_x alive: the server answers in another block
        running = running and not unrelated.query()
        unrelated.synchronize()
        return out_x, out_y, running

    # What is tested is the calls' own ordering, in steady state: so the same
    # round runs once untimed first. Mapping a server allocation this process
    # has not mapped before (cudaIpcOpenMemHandle), and closing the oldest
    # mapping once the client's cache of 64 is full, may synchronise the
    # device in CUDA itself: on the H200 (bench/probes/ipc_events_rounds.py)
    # a call that did either waited 500-600 ms for `unrelated`, in a fresh
    # process and in the full suite (whose earlier tests fill the cache),
    # and no call of a second round did. Kernels are loaded on their first
    # launch, which may wait for the device too (a fresh process's first
    # x.sum() waited 611 ms): the untimed round launches every kernel used.
    pending_calls()
    out_x, out_y, running = pending_calls()
    assert running, "a call waited for an unrelated stream: a device synchronisation"
    assert torch.equal(torch.from_dlpack(out_x), torch.full_like(x, 9.0))
    assert torch.equal(torch.from_dlpack(out_y), torch.full_like(y, 8.0))
    del out_x, out_y


class NoStreamDlpack:
    """A DLPack producer whose __dlpack__ takes no stream argument."""

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()

    def __dlpack__(self):
        return self.tensor.__dlpack__()


def test_dlpack_producers_without_a_stream_argument_are_synchronised():
    local = tesscpp.Tesseract.from_library(example("noop"), gpu_transport="cuda_ipc")
    x, side = _pending_fill(1 << 16, 4.0)
    out = local.apply({"x": NoStreamDlpack(x)})["x"]
    assert side.query(), "the producer's stream is unknown, so the device is synchronised"
    assert torch.equal(torch.from_dlpack(out), torch.full_like(x, 4.0))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_in_process_components_share_framework_arrays(framework):
    """In-process with cuda_ipc, torch, CuPy and JAX arrays reach the component
    and come back as the same memory (no copy either way)."""
    array, pointer = _framework_array(framework)
    t = tesscpp.Tesseract.from_library(example("noop"), gpu_transport="cuda_ipc")
    out = t.apply({"x": array})["x"]
    assert out.__cuda_array_interface__["data"][0] == pointer
    assert torch.equal(torch.from_dlpack(out), torch.arange(10, dtype=torch.float32, device="cuda"))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_served_framework_arrays_round_trip(noop, framework):
    array, _ = _framework_array(framework)
    out = noop.apply({"x": array})["x"]
    assert torch.equal(torch.from_dlpack(out), torch.arange(10, dtype=torch.float32, device="cuda"))


@pytest.mark.parametrize("form", ["cpp", "py"])
def test_apply_tesseract_forward_and_backward_on_the_device(form):
    t = served(_component("devid", form))
    try:
        a = torch.randn(1000, device="cuda", requires_grad=True)
        w = torch.randn(1000, device="cuda")
        out = apply_tesseract(t, {"a": a})
        assert out["c"].device.type == "cuda"
        assert torch.equal(out["c"].detach(), a.detach())
        (out["c"] * w).sum().backward()
        assert a.grad.device.type == "cuda" and torch.equal(a.grad, w)
    finally:
        t.teardown()


@pytest.mark.parametrize("form", ["cpp", "py"])
@pytest.mark.parametrize("method", ["sequential", "parallel"])
def test_apply_tesseract_under_vmap_on_the_device(method, form):
    """torch.vmap over CUDA tensors: each element's slice crosses by cuda_ipc,
    outputs and gradients come back on the device with exact values; and a
    vectorised jacobian (batched cotangents) on the device."""
    t = served(_component("devid", form))
    try:
        a = torch.randn(8, 100, device="cuda", requires_grad=True)
        w = torch.randn(8, 100, device="cuda")
        c = torch.vmap(lambda row: apply_tesseract(t, {"a": row}, vmap_method=method)["c"])(a)
        assert c.device.type == "cuda" and torch.equal(c.detach(), a.detach())
        (c * w).sum().backward()
        assert a.grad.device.type == "cuda" and torch.equal(a.grad, w)
        x = torch.randn(5, device="cuda")
        jac = torch.autograd.functional.jacobian(lambda v: apply_tesseract(t, {"a": v})["c"], x, vectorize=True)
        assert jac.device.type == "cuda" and torch.equal(jac, torch.eye(5, device="cuda"))
    finally:
        t.teardown()


def test_components_without_device_arrays_get_host_copies():
    """A served component that takes host arrays only still gets CUDA inputs
    over cuda_ipc: the server reads them out of the client's memory into host
    copies (and its host outputs come back as host arrays)."""
    import numpy

    t = served(fixture("vec"))
    try:
        a = torch.arange(1000, dtype=torch.float32, device="cuda")
        b = torch.full((1000,), 0.5, device="cuda")
        c = t.apply({"a": a, "b": b})["c"]
        assert numpy.array_equal(numpy.asarray(c), (a + b).cpu().numpy())
        cotangent = torch.full((1000,), 2.0, device="cuda")
        vjp = t.vector_jacobian_product({"a": a, "b": b}, ["a"], ["c"], {"c": cotangent})
        assert (numpy.asarray(vjp["a"]) == 2).all()
    finally:
        t.teardown()


# -- borrowed outputs (tesscpp's lease, docs/gpu-transport-protocol.md 11) ------


def _this_process() -> str:
    """Tesscpp-Borrower's value for this process: pid and start time (field 22
    of /proc/self/stat, counted after the command name)."""
    stat = Path("/proc/self/stat").read_text()
    return f"{os.getpid()}:{stat[stat.rindex(')') + 2 :].split()[19]}"


def test_borrowed_outputs_keep_their_values(noop):
    """Outputs are read in place from the server's memory, which the server
    keeps while we hold them: many later calls (whose staging buffers would
    reuse that memory once released) leave them unchanged."""
    n = 1 << 16
    held = [on_device(noop.apply({"x": torch.full((n,), float(i), device="cuda")})["x"]) for i in range(8)]
    for _ in range(200):
        noop.apply({"x": torch.full((n,), -1.0, device="cuda")})
    for i, y in enumerate(held):
        assert torch.equal(y, torch.full((n,), float(i), device="cuda")), i


def test_teardown_waits_for_borrowed_outputs():
    """A served Tesseract torn down while one of its outputs is borrowed keeps
    its server running until that output is gone."""
    import gc
    import time

    t = served(example("noop"))
    url = t._url
    y = on_device(t.apply({"x": torch.arange(4096, dtype=torch.float32, device="cuda")})["x"])
    t.teardown()
    with urllib.request.urlopen(url + "/health", timeout=10) as response:
        assert response.status == 200
    assert torch.equal(y, torch.arange(4096, dtype=torch.float32, device="cuda"))
    del y
    gc.collect()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1).close()
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server kept running after the last borrowed output was gone")


# -- CUDA_VISIBLE_DEVICES differing between client and server (issue 21) --------


@pytest.mark.parametrize("visible", ["index", "nvml-uuid"])
def test_a_server_that_names_the_gpu_differently(monkeypatch, visible):
    """The server sees the client's GPU through its own CUDA_VISIBLE_DEVICES
    (an index, or NVML's GPU-<uuid> name): arrays are named by UUID, so they
    still reach it and come back on the client's device. (On one GPU the
    ordinals agree; two GPUs would also remap them.)"""
    uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    t = tesscpp.Tesseract.from_source(example("noop"), gpu_transport="cuda_ipc")
    with monkeypatch.context() as m:
        m.setenv("CUDA_VISIBLE_DEVICES", str(torch.cuda.current_device()) if visible == "index" else f"GPU-{uuid}")
        t.serve()
    try:
        for n in (1, 1000, (1 << 20) + 3):
            x = torch.randn(n, device="cuda")
            y = on_device(t.apply({"x": x})["x"])
            assert y.device == x.device and torch.equal(y, x), n
    finally:
        t.teardown()


def test_a_server_that_sees_no_gpu_says_which_one_it_lacks(monkeypatch):
    """A 422 (pydantic's ValidationError, as tesseract_core raises it) of type
    array_decode_error that names the GPU by UUID and how to give access."""
    import pydantic

    uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    t = tesscpp.Tesseract.from_source(example("noop"), gpu_transport="cuda_ipc")
    with monkeypatch.context() as m:
        m.setenv("CUDA_VISIBLE_DEVICES", "")
        t.serve()
    try:
        with pytest.raises(pydantic.ValidationError) as refused:
            t.apply({"x": torch.ones(10, device="cuda")})
        print(f"server without the GPU: {refused.value}")
        errors = refused.value.errors()
        assert [e["type"] for e in errors] == ["array_decode_error"], errors
        assert f"the GPU with UUID {uuid}" in errors[0]["msg"] and "CUDA_VISIBLE_DEVICES" in errors[0]["msg"], errors
    finally:
        t.teardown()


# -- interoperability with tesseract-core 1.15 -----------------------------------


@needs_tesseract_core
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_tesseract_core_client_against_tesscpp_server(noop, dtype):
    sdk = tesseract_core.Tesseract.from_url(noop._url).with_encoding(gpu_transport="cuda_ipc")
    assert sdk.resolve_gpu_transport() == "cuda_ipc"
    for shape in [(), (0,), (5,), (300, 7)]:
        x = random_tensor(shape, dtype)
        y = torch.from_dlpack(sdk.apply({"x": x})["x"])
        assert y.device.type == "cuda" and torch.equal(y, x)


@needs_tesseract_core
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_tesscpp_client_against_tesseract_core_server(dtype):
    t = served(NOOP_PY, python_executable=sys.executable, python_runtime="tesseract-runtime")
    try:
        assert t.resolve_gpu_transport() == "cuda_ipc"
        for shape in [(), (0,), (5,), (300, 7)]:
            x = random_tensor(shape, dtype)
            y = on_device(t.apply({"x": x})["x"])
            assert torch.equal(y, x)
    finally:
        t.teardown()


@needs_tesseract_core
def test_apply_tesseract_against_tesseract_core_server():
    t = served(DEVID_PY, python_executable=sys.executable, python_runtime="tesseract-runtime")
    try:
        a = torch.randn(64, device="cuda", requires_grad=True)
        out = apply_tesseract(t, {"a": a})
        assert out["c"].device.type == "cuda" and torch.equal(out["c"].detach(), a.detach())
        out["c"].sum().backward()
        assert torch.equal(a.grad, torch.ones_like(a))
    finally:
        t.teardown()


def _post(url: str, path: str, body: dict, headers: dict) -> tuple[bytes, dict]:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), {k.lower(): v for k, v in response.headers.items()}


def _normalised(body: bytes) -> str:
    """The body with what differs by nature (handle bytes, offsets, sizes) replaced."""
    pattern = r'"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):([A-Za-z0-9+/=]*):(\d+):(\d+)"'
    for match in re.finditer(pattern, body.decode()):
        assert len(match.group(2)) in (0, 88), match.group(0)
    return re.sub(pattern, lambda m: f'"{m.group(1)}:{"H" if m.group(2) else ""}:O:S"', body.decode())


_IPC_ACCEPT = {"Accept": "application/json+base64; gpu_transport=cuda_ipc", "Tesseract-Exports-Done": ""}


def _apply_exported(calls: list[tuple[str, dict]]) -> list[tuple[bytes, dict]]:
    """POST /apply of one array exported by tesseract-core's check exporter, to
    each (url, extra headers), while the export lives."""
    from tesseract_core.runtime.cuda.check import start_transport_check

    request, _, release = start_transport_check("cuda_ipc")
    try:
        return [
            _post(url, "/apply", {"inputs": {"x": request["array"]}}, {**_IPC_ACCEPT, **extra}) for url, extra in calls
        ]
    finally:
        release()


@needs_tesseract_core
def test_wire_bytes_match_tesseract_core(noop):
    """The same requests to both servers: the same bytes back, except the
    handle, offset and allocation size, and the same headers."""
    from tesseract_core.runtime.cuda.check import start_transport_check

    reference = served(NOOP_PY, python_executable=sys.executable, python_runtime="tesseract-runtime")
    try:
        request, _, release = start_transport_check("cuda_ipc")
        try:
            ours, our_headers = _post(noop._url, "/check_gpu_transport", request, {})
            theirs, their_headers = _post(reference._url, "/check_gpu_transport", request, {})
        finally:
            release()
        print("check reply (tesscpp):", ours.decode()[:200])
        assert _normalised(ours) == _normalised(theirs)
        assert re.fullmatch(r"[0-9a-f]{32}", our_headers["tesseract-exports"])
        assert re.fullmatch(r"[0-9a-f]{32}", their_headers["tesseract-exports"])
        # A check request from tesseract-core's exporter, answered by each.
        bodies = _apply_exported([(noop._url, {}), (reference._url, {})])
        print("apply reply (tesscpp):", bodies[0][0].decode()[:200])
        assert _normalised(bodies[0][0]) == _normalised(bodies[1][0])
        for _body, headers in bodies:
            assert re.fullmatch(r"[0-9a-f]{32}", headers["tesseract-exports"])
            assert headers["content-type"] == "application/json+base64"
            assert "tesscpp-ipc-events" not in headers and "tesscpp-exports-event" not in headers
        # tesscpp's lease: offered to a borrower the server can see, on top of
        # the same bytes; tesseract-core ignores the header.
        answers = _apply_exported(
            [
                (url, {"Tesscpp-Borrower": borrower})
                for url, borrower in [
                    (noop._url, _this_process()),
                    (noop._url, "999999999:1"),
                    (reference._url, _this_process()),
                ]
            ]
        )
        assert [headers.get("tesscpp-exports-lease") for _, headers in answers] == ["borrower", None, None]
        assert len({_normalised(body) for body, _ in answers}) == 1
        # tesscpp's IPC events: offered, answered with the server's event after
        # the same bytes; tesseract-core ignores the offer.
        offer = {"Tesscpp-Ipc-Events": "1"}
        (our_body, ours_events), (their_body, theirs_events) = _apply_exported(
            [(noop._url, offer), (reference._url, offer)]
        )
        assert ours_events["tesscpp-ipc-events"] == "1"
        assert re.fullmatch(r"[0-9a-f-]{36}:[A-Za-z0-9+/]{86}==", ours_events["tesscpp-exports-event"])
        assert "tesscpp-ipc-events" not in theirs_events and "tesscpp-exports-event" not in theirs_events
        assert _normalised(our_body) == _normalised(their_body)
        # A disabled check route: the same answer too.
        body = {"gpu_transport": "none"}
        assert (
            _post(noop._url, "/check_gpu_transport", body, {})[0]
            == _post(reference._url, "/check_gpu_transport", body, {})[0]
        )
    finally:
        reference.teardown()


# -- Python modules computing on the device (docs/python-host.md) --------------


@pytest.fixture(scope="module")
def devscale():
    t = served(_component("devscale", "py"))
    yield t
    t.teardown()


@pytest.mark.parametrize(
    "framework, side_stream", [("torch", False), ("torch", True), ("cupy", False), ("cupy", True), ("jax", False)]
)
def test_python_endpoints_compute_on_device_inputs(devscale, framework, side_stream):
    """A Python endpoint adopts its device inputs with torch, CuPy or JAX
    (JAX, and the side streams, consume on a stream of their own) and returns
    the framework's CUDA array. The client's producer is still spinning when
    the call is made: the endpoint's stream must wait for the client's event,
    which only the legacy default stream does unless DeviceArray orders the
    consumer's stream after it."""
    _framework(framework)
    x = torch.zeros(1 << 18, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(_LONG_SPIN)  # on torch's current stream, which the client's event follows
    x.fill_(3.0)
    y = on_device(devscale.apply({"x": x, "framework": framework, "side_stream": side_stream})["y"])
    assert torch.equal(y, torch.full_like(x, 7.0))
    for i in range(20):  # and in steady state, without a pending producer
        x = torch.full((1000 + i,), float(i), device="cuda")
        y = on_device(devscale.apply({"x": x, "framework": framework, "side_stream": side_stream})["y"])
        assert torch.equal(y, 2 * x + 1), i


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_python_endpoint_gradients_on_the_device(devscale, framework):
    """apply_tesseract through a Python module's VJP and JVP on the device."""
    _framework(framework)
    x = torch.randn(4096, device="cuda", requires_grad=True)
    w = torch.randn(4096, device="cuda")
    y = apply_tesseract(devscale, {"x": x, "framework": framework})["y"]
    assert y.device.type == "cuda" and torch.equal(y.detach(), 2 * x.detach() + 1)
    (y * w).sum().backward()
    assert x.grad.device.type == "cuda" and torch.equal(x.grad, 2 * w)
    tangent = torch.randn(4096, device="cuda")
    jvp = devscale.jacobian_vector_product({"x": x.detach(), "framework": framework}, ["x"], ["y"], {"x": tangent})
    assert torch.equal(on_device(jvp["y"]), 2 * tangent)


def test_python_module_on_device_matches_tesseract_runtime(devscale):
    """The same module on both runtimes, reached by tesseract-core's SDK with
    cuda_ipc and by ours: the same device values; no host copy anywhere on our
    path (the client's implicit-copy guard is on, and its exports go by handle)."""
    reference = served(
        _component("devscale", "py"), python_executable=sys.executable, python_runtime="tesseract-runtime"
    )
    try:
        x = torch.randn(1 << 16, device="cuda")
        answers = []
        for url in (devscale._url, reference._url):
            sdk = tesseract_core.Tesseract.from_url(url).with_encoding(gpu_transport="cuda_ipc")
            assert sdk.resolve_gpu_transport() == "cuda_ipc"
            answers.append(torch.from_dlpack(sdk.apply({"x": x})["y"]))
        assert all(a.device.type == "cuda" for a in answers) and torch.equal(answers[0], answers[1])
        before = tesscpp.cuda.transport_counters()
        with pytest.MonkeyPatch.context() as m:
            m.setenv("TESSERACT_FORBID_DEVICE_HOST_COPY", "1")
            y = on_device(devscale.apply({"x": x})["y"])
        after = tesscpp.cuda.transport_counters()
        assert torch.equal(y, answers[1])
        assert after["staged_exports"] == before["staged_exports"]
        assert after["legacy_exports"] + after["vmm_exports"] > before["legacy_exports"] + before["vmm_exports"]
    finally:
        reference.teardown()


def test_python_module_churn_on_the_device(devscale):
    """10 000 calls of a torch-computing Python module: right values, device
    memory (the server's included: mem_get_info sees the whole GPU) flat."""
    for i in range(200):
        devscale.apply({"x": torch.full((1 + i % 4096,), 1.0, device="cuda")})
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    for i in range(10_000):
        x = torch.full((1 + (i * 37) % 65_536,), float(i % 100), device="cuda")
        y = on_device(devscale.apply({"x": x})["y"])
        if i % 101 == 0:
            assert torch.equal(y, 2 * x + 1), i
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    growth = free_before - free_after
    print(f"python churn: device memory in use grew by {growth / 2**20:.1f} MiB over 10000 calls")
    assert growth < leak_bound([4 * (1 + (i * 37) % 65_536) for i in range(10_000)])
