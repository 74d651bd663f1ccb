"""What the CUDA driver says about the memory under torch and JAX arrays.

Run on a GPU machine, once with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
and once without: for a 1 GiB and a 4 KiB tensor it walks the mappings under
the tensor (mapping base and size) and prints, per mapping, the buffer id, the
handle types the allocation allows (1 = POSIX fd) and whether legacy IPC can
name it. This decided how cuda_vmm finds the pieces of a tensor
(docs/gpu-transport-protocol.md 13).
"""

import ctypes
import os
import sys

import torch

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuPointerGetAttributes.argtypes = [
    ctypes.c_uint,
    ctypes.POINTER(ctypes.c_int),
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_ulonglong,
]
# CUpointer_attribute values (cuda.h)
BUFFER_ID, RANGE_START, RANGE_SIZE, LEGACY, MAPPING_SIZE, MAPPING_BASE, ALLOWED, BLOCK_ID = (
    7,
    11,
    12,
    10,
    18,
    19,
    14,
    20,
)


def describe(address):
    buffer_id = ctypes.c_ulonglong()
    range_start = ctypes.c_ulonglong()
    range_size = ctypes.c_size_t()
    legacy = ctypes.c_int(-1)
    mapping_size = ctypes.c_size_t()
    mapping_base = ctypes.c_ulonglong()
    allowed = ctypes.c_ulonglong()
    block_id = ctypes.c_ulonglong()
    attrs = (ctypes.c_int * 8)(
        BUFFER_ID, RANGE_START, RANGE_SIZE, LEGACY, MAPPING_SIZE, MAPPING_BASE, ALLOWED, BLOCK_ID
    )
    values = (ctypes.c_void_p * 8)(
        *[
            ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
            for v in (buffer_id, range_start, range_size, legacy, mapping_size, mapping_base, allowed, block_id)
        ]
    )
    r = cuda.cuPointerGetAttributes(8, attrs, values, address)
    return {
        "r": r,
        "buffer_id": buffer_id.value,
        "range": (range_start.value - address, range_size.value),
        "mapping": (mapping_base.value, mapping_size.value),
        "allowed": allowed.value,
        "legacy": legacy.value,
        "block_id": block_id.value,
    }


def walk(name, tensor):
    start = tensor.data_ptr()
    end = start + tensor.numel() * tensor.element_size()
    address = start
    pieces = []
    while address < end:
        d = describe(address)
        base, size = d["mapping"]
        pieces.append(d)
        if d["r"] != 0 or size == 0:
            break
        address = base + size
    first = pieces[0]
    sizes = sorted({p["mapping"][1] for p in pieces})
    print(
        f"{name}: {len(pieces)} mapping(s), sizes {sizes[:4]}, first offset {start - first['mapping'][0]}, "
        f"r={first['r']} buffer ids {[p['buffer_id'] for p in pieces[:3]]}... "
        f"block ids {[p['block_id'] for p in pieces[:3]]}..., allowed {first['allowed']:#x}, "
        f"legacy {first['legacy']}, range {first['range']}"
    )


print("PYTORCH_CUDA_ALLOC_CONF =", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
big = torch.ones(1 << 28, device="cuda")  # 1 GiB of float32
small = torch.ones(1024, device="cuda")
mid = torch.ones(16 << 20, device="cuda")  # 64 MiB
walk("torch 1 GiB", big)
walk("torch 64 MiB", mid)
walk("torch 4 KiB", small)
del big
torch.cuda.empty_cache()
again = torch.ones(1 << 28, device="cuda")
walk("torch 1 GiB after empty_cache", again)
if len(sys.argv) > 1 and sys.argv[1] == "jax":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax.numpy as jnp

    x = jnp.ones(1 << 20, dtype=jnp.float32)
    walk("jax 4 MiB", torch.from_dlpack(x))
