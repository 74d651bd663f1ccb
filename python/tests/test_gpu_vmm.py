"""tesscpp's cuda_vmm extension: VMM memory by reference between processes.

PyTorch's expandable segments (and any cuMemCreate allocation) cannot be
exported with a legacy IPC handle. Between two tesscpp ends the allocations
under a tensor go as POSIX file descriptors instead (docs/gpu-transport-protocol.md
13). Needs a CUDA device, the tesscpp package built with CUDA and the
fixtures (libnoop.so, libvmmout.so); run as test_gpu_transport.py is.

PyTorch reads its allocator configuration when it starts CUDA, and a process
that already cached ordinary segments keeps serving from them; so in a
process without PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the one test
here runs this module again in a child process that has it, printing each of
its tests' outcomes.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import tesscpp
import tesscpp.cuda

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

MiB = 1 << 20
EXPANDABLE = "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")

if not EXPANDABLE:

    def test_in_a_process_with_expandable_segments():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "--noconftest", "-rs", __file__],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        print(done.stdout[-30000:])
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def example(name: str) -> Path:
    return Path(os.environ["TESSCPP_EXAMPLES_DIR"]) / f"lib{name}.so"


def fixture(name: str) -> Path:
    return Path(os.environ["TESSCPP_BRIDGE_FIXTURES"]) / f"lib{name}.so"


def served(path: Path) -> tesscpp.Tesseract:
    t = tesscpp.Tesseract.from_source(path, gpu_transport="cuda_ipc")
    t.serve()
    return t


# -- what the driver says about a pointer (independent of tesscpp) ---------------

_driver = None


def describe(pointer: int) -> dict:
    """The driver's view of the memory at `pointer`: whether legacy IPC can name
    it, the handle types its allocation allows (1: POSIX fd), its physical
    block and the mapping it lies in."""
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
        _driver.cuPointerGetAttributes.argtypes = [
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_ulonglong,
        ]
    legacy, allowed, block = ctypes.c_int(-1), ctypes.c_ulonglong(), ctypes.c_ulonglong()
    base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
    # CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ALLOWED_HANDLE_TYPES,
    # MEMORY_BLOCK_ID, MAPPING_BASE_ADDR, MAPPING_SIZE (cuda.h)
    attributes = (ctypes.c_int * 5)(10, 14, 20, 19, 18)
    values = (ctypes.c_void_p * 5)(
        *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in (legacy, allowed, block, base, size)]
    )
    assert _driver.cuPointerGetAttributes(5, attributes, values, pointer) == 0
    return {
        "legacy": legacy.value,
        "allowed": allowed.value,
        "block": block.value,
        "mapping_base": base.value,
        "mapping_size": size.value,
    }


@pytest.fixture(scope="module")
def expandable():
    """Only in the process whose torch allocates expandable segments (VMM)."""
    if not EXPANDABLE:
        pytest.skip("runs in the child process with expandable segments")


@pytest.fixture(scope="module")
def noop(expandable):
    t = served(example("noop"))
    yield t
    t.teardown()


@pytest.fixture(scope="module")
def vmmout(expandable):
    t = served(fixture("vmmout"))
    yield t
    t.teardown()


def counts() -> dict:
    return tesscpp.cuda.transport_counters()


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def test_expandable_segments_are_vmm_memory_with_fd_export(expandable):
    x = torch.empty(64 * MiB // 4, device="cuda")
    d = describe(x.data_ptr())
    print(f"expandable segment: {d}")
    assert d["legacy"] == 0, "legacy IPC can name this memory: not an expandable segment"
    assert d["allowed"] & 1, "torch's expandable segments do not allow POSIX fd export here"
    assert d["block"] != 0 and d["mapping_size"] > 0


@pytest.mark.parametrize("n", [1, 1000, 5 * MiB + 7, 64 * MiB // 4 + 3])
def test_inputs_go_by_reference(noop, n):
    """Expandable-segment inputs are read by the server where they lie: after
    the first call (which learns that the server maps VMM memory) nothing is
    staged, and the values come back exact."""
    x = torch.randn(n, device="cuda")
    noop.apply({"x": x})  # the first call to this server may stage
    before = counts()
    for i in range(5):
        x = torch.randn(n, device="cuda") + i
        y = torch.from_dlpack(noop.apply({"x": x})["x"])
        assert torch.equal(y, x)
    moved = delta(before, counts())
    print(f"n={n}: {moved}")
    assert moved.get("staged_exports", 0) == 0, moved
    assert moved.get("vmm_exports", 0) == 5, moved


def test_a_tensor_across_several_allocations(noop):
    """A tensor spanning torch's 20 MiB chunks is described by all of them and
    mapped side by side on the other end."""
    x = torch.arange(200 * MiB // 4, dtype=torch.float32, device="cuda")
    first, last = describe(x.data_ptr()), describe(x.data_ptr() + x.numel() * 4 - 1)
    assert first["block"] != last["block"], "the tensor lies in one allocation: nothing to test"
    noop.apply({"x": x[:10]})
    for offset in (0, 12345, 5 * MiB + 1):
        view = x[offset:]
        assert torch.equal(torch.from_dlpack(noop.apply({"x": view})["x"]), view), offset


def test_outputs_go_by_reference(vmmout):
    """A component answering in VMM memory: the client maps it (no staging on
    the server, whose descriptors name VMM allocations), borrows it in place,
    and finds the same allocations mapped on later calls."""
    x = torch.arange(3 * MiB, dtype=torch.float32, device="cuda")  # 12 MiB: six 2 MiB allocations
    vmmout.apply({"a": x})
    vmmout.apply({"a": x})
    before = counts()
    outputs = []
    for i in range(4):
        out = vmmout.apply({"a": x + i})["c"]
        assert isinstance(out, tesscpp.DeviceArray)
        outputs.append(out)
        y = torch.from_dlpack(out)
        assert torch.equal(y, x + i), i
        d = describe(y.data_ptr())
        assert d["legacy"] == 0 and d["allowed"] == 0, d  # a peer's allocation mapped here
    moved = delta(before, counts())
    print(f"vmmout: {moved}")
    assert moved.get("vmm_maps_opened", 0) + moved.get("vmm_maps_reused", 0) == 4, moved
    assert moved.get("vmm_exports", 0) == 4, moved  # the inputs, expandable segments
    for i, out in enumerate(outputs):  # borrowed outputs keep their values
        assert torch.equal(torch.from_dlpack(out), x + i), i
    del outputs
    before = counts()
    for _ in range(3):
        assert torch.equal(torch.from_dlpack(vmmout.apply({"a": x})["c"]), x)
    assert delta(before, counts()).get("vmm_maps_reused", 0) >= 2, "the pool's allocations came back unmapped"


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _children() -> list[int]:
    me = str(os.getpid())
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2 :].split()[1] == me:
                pids.append(int(entry))
    return pids


def test_churn(noop, vmmout):
    """10 000 calls in both directions: values right, no growth of device
    memory, of mappings, or of open descriptors on either side."""
    sizes = [1, 1000, 1 << 18, 5 * MiB + 3]
    for i in range(200):
        noop.apply({"x": torch.full((sizes[i % 4],), float(i), device="cuda")})
        vmmout.apply({"a": torch.full((sizes[i % 4],), float(i), device="cuda")})
    torch.cuda.synchronize()
    servers = _children()
    fds_before = {pid: _open_fds(pid) for pid in servers + [os.getpid()]}
    free_before, _ = torch.cuda.mem_get_info()
    before = counts()
    for i in range(10_000):
        x = torch.full((sizes[i % 4],), float(i), device="cuda")
        t, key = (noop, "x") if i % 2 else (vmmout, "a")
        y = t.apply({key: x})["c" if t is vmmout else "x"]
        if i % 97 == 0:
            assert torch.equal(torch.from_dlpack(y), x), i
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    moved = delta(before, counts())
    fds_after = {pid: _open_fds(pid) for pid in fds_before if Path(f"/proc/{pid}").exists()}
    growth = free_before - free_after
    print(f"churn: {moved}; device memory in use grew by {growth / MiB:.1f} MiB; fds {fds_before} -> {fds_after}")
    assert growth < 256 * MiB
    assert moved.get("staged_exports", 0) == 0, moved
    assert moved.get("vmm_maps_opened", 0) < 100, moved
    for pid, n in fds_after.items():
        assert n <= fds_before[pid] + 8, (pid, fds_before[pid], n)


def _run_client(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_borrower_that_dies_mid_lease(vmmout):
    """A client that dies while it borrows VMM outputs: the server frees them
    when it sees the process gone, and reuses their memory."""
    n = 16 * MiB  # 64 MiB per output
    x = torch.ones(n, device="cuda")
    vmmout.apply({"a": x})
    torch.cuda.synchronize()
    free_start, _ = torch.cuda.mem_get_info()
    child = _run_client(
        """
        import os, sys, torch, tesscpp
        t = tesscpp.Tesseract.from_url(sys.argv[1], gpu_transport="cuda_ipc")
        x = torch.ones(16 << 20, device="cuda")
        held = [t.apply({"a": x + i})["c"] for i in range(10)]
        ok = all(torch.equal(torch.from_dlpack(h), x + i) for i, h in enumerate(held))
        print("holding" if ok else "wrong", flush=True)
        sys.stdin = None
        os.kill(os.getpid(), 9)
        """,
        vmmout.url,
    )
    assert child.stdout.readline().strip() == "holding"
    child.wait(timeout=60)
    torch.cuda.synchronize()
    free_held, _ = torch.cuda.mem_get_info()
    print(f"the dead borrower's outputs: {(free_start - free_held) / MiB:.0f} MiB")
    # The server notices the borrower's death at its next sweeps; its ten
    # outputs' memory then serves ours: holding ten outputs ourselves needs
    # no new device memory.
    deadline = time.monotonic() + 30
    while True:
        held = [vmmout.apply({"a": x * i})["c"] for i in range(10)]
        torch.cuda.synchronize()
        free_now, _ = torch.cuda.mem_get_info()
        if free_now >= free_held - 64 * MiB or time.monotonic() > deadline:
            break
        del held
        time.sleep(0.5)
    for i, h in enumerate(held):
        assert torch.equal(torch.from_dlpack(h), x * i), i
    print(f"after: {(free_held - free_now) / MiB:.0f} MiB more in use")
    assert free_now >= free_held - 64 * MiB, "the dead borrower's outputs were not reused"


def test_an_exporter_that_exits_releases_its_memory(noop):
    """The server lets go of a client's mapped inputs within about a second of
    the client's exit, so the memory of a process that is gone returns to the
    device."""
    torch.cuda.synchronize()
    free_start, _ = torch.cuda.mem_get_info()
    n = (1 << 28) + (1 << 20)  # 1 GiB + 4 MiB: a size the server's staging pool has not seen
    child = _run_client(
        """
        import sys, torch, tesscpp
        t = tesscpp.Tesseract.from_url(sys.argv[1], gpu_transport="cuda_ipc")
        x = torch.ones(int(sys.argv[2]), device="cuda")
        t.apply({"x": x[:10]})
        ok = torch.equal(torch.from_dlpack(t.apply({"x": x})["x"]), x)
        print("sent" if ok else "wrong", flush=True)
        """,
        noop.url,
        str(n),
    )
    assert child.stdout.readline().strip() == "sent"
    assert child.wait(timeout=60) == 0
    # Left in the server: its staging copy of the answer (pooled, n * 4 bytes)
    # and, until it forgets the mapping, the client's input (as much again).
    deadline = time.monotonic() + 10
    while True:
        used = free_start - torch.cuda.mem_get_info()[0]
        if used < 1.5 * n * 4 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(f"device memory in use after the client exited: {used / MiB:.0f} MiB")
    assert used < 1.5 * n * 4, "the exited client's input stayed mapped in the server"


def test_turned_off_it_stages_with_one_warning(expandable, monkeypatch):
    """TESSCPP_CUDA_VMM=0 in the server: it does not accept the offer, and the
    client stages VMM inputs, saying so once."""
    script = """
        import sys, torch, tesscpp, tesscpp.cuda
        t = tesscpp.Tesseract.from_url(sys.argv[1], gpu_transport="cuda_ipc")
        for i in range(4):
            x = torch.randn(1000, device="cuda")
            assert torch.equal(torch.from_dlpack(t.apply({"x": x})["x"]), x)
        c = tesscpp.cuda.transport_counters()
        print(c["staged_exports"], c["vmm_exports"], flush=True)
        """
    t = tesscpp.Tesseract.from_source(example("noop"), gpu_transport="cuda_ipc")
    with monkeypatch.context() as m:
        m.setenv("TESSCPP_CUDA_VMM", "0")  # for the server process only: ours has its endpoint already
        t.serve()
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script), t.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        t.teardown()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "0"], done.stdout
    assert done.stderr.count("copied into a staging buffer") == 1, done.stderr
