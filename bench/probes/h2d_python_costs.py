"""What the Python side of transfer_h2d pays per tensor on a GPU host.

The torch calls it makes for each CPU tensor of a batch (1000 x 64 KiB
float32), best of 7 loops, and two alternatives for the destinations. Output
of the H200 run: bench/results/h2d-python-costs-20261202.txt.

    python3 bench/probes/h2d_python_costs.py
"""

import time

import torch

sources = [torch.randn(16384) for _ in range(1000)]
pinned = [x.pin_memory() for x in sources]
device = torch.device("cuda", 0)
torch.empty(1, device=device)


def per_tensor(name, f, data=sources):
    best = 1e9
    for _ in range(7):
        t0 = time.perf_counter()
        for x in data:
            f(x)
        best = min(best, (time.perf_counter() - t0) / len(data) * 1e6)
    print(f"{name}: {best:.2f} us per tensor")


per_tensor("detach.contiguous.resolve_conj.resolve_neg", lambda x: x.detach().contiguous().resolve_conj().resolve_neg())
per_tensor("is_pinned (pageable)", lambda x: x.is_pinned())
per_tensor("is_pinned (pinned)", lambda x: x.is_pinned(), pinned)
per_tensor("data_ptr+numel*element_size", lambda x: (x.data_ptr(), x.numel() * x.element_size()))
kept = []
per_tensor("torch.empty on cuda (kept)", lambda x: kept.append(torch.empty(x.shape, dtype=x.dtype, device=device)))
kept.clear()
torch.cuda.synchronize()
flat = torch.empty(1000 * 65536, dtype=torch.uint8, device=device)
t0 = time.perf_counter()
views = torch.split(flat, [65536] * 1000)
print(f"torch.split of one buffer: {(time.perf_counter() - t0) / 1000 * 1e6:.2f} us per view")
per_tensor("view(dtype).view(shape)", lambda v: v.view(torch.float32).view((16384,)), views)
per_tensor("isinstance+device.type", lambda x: isinstance(x, torch.Tensor) and x.device.type != "cpu")
t0 = time.perf_counter()
for x in sources:
    x.to(device, non_blocking=True)
torch.cuda.synchronize()
print(f"torch .to(non_blocking) pageable: {(time.perf_counter() - t0) / 1000 * 1e6:.2f} us per tensor")
