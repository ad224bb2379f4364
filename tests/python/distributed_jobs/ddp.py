"""One rank of the DistributedDataParallel job of tests/python/test_distributed_ddp.py.

Each check trains a DDP model on this rank's share of a global batch and, on every rank,
compares it with the same model trained in this one process on the whole batch
(float64 within 1e-12, float32 within 1e-5). Prints ``OK <rank>`` and ``HASH <hex>``
(a digest of the final parameters, equal on every rank) at the end.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np
import rustgrad as torch
import rustgrad.distributed as dist
from rustgrad import nn
from rustgrad.models import LeNet
from rustgrad.nn.parallel import DistributedDataParallel as DDP

STEPS = 5


def mlp(dtype: torch.dtype) -> nn.Module:
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3)
    ).to(dtype)


class Scaled(nn.Module):
    """A parameter and a buffer that the forward uses."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, dtype=torch.float64))
        self.register_buffer("scale", torch.tensor([scale], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight * self.scale


class WithUnused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.a(x)))


def batch(step: int, n: int, shape: tuple[int, ...], dtype: np.dtype) -> tuple[Any, Any]:
    g = np.random.default_rng(100 + step)
    x = g.standard_normal((n, *shape)).astype(dtype)
    y = g.standard_normal((n, 3)).astype(dtype)
    return torch.tensor(x), torch.tensor(y)


def train_pair(
    model: nn.Module,
    shape: tuple[int, ...],
    np_dtype: Any,
    tol: float,
    rank: int,
    world: int,
    per_rank: int = 2,
) -> nn.Module:
    """DDP on this rank's share against one process on the whole batch."""
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    # construction broadcast rank 0's parameters (each rank seeded differently)
    ref.load_state_dict(ddp.module.state_dict())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = batch(step, per_rank * world, shape, np_dtype)
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()
        opt.step()
        ref_opt.zero_grad()
        nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for (name, p), q in zip(ddp.module.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(
            p.detach().numpy(), q.detach().numpy(), rtol=tol, atol=tol, err_msg=name
        )
    return ddp


def names(module: nn.Module, bucket: Any) -> list[str]:
    trainable = [n for n, p in module.named_parameters() if p.requires_grad]
    return [trainable[i] for i in bucket.indices]


def expect(kind: type, phrase: str, fn: Any) -> None:
    try:
        fn()
    except kind as e:
        assert phrase in str(e), e
    else:
        raise AssertionError(f"expected {kind.__name__}: {phrase}")


def digest(module: nn.Module) -> str:
    h = hashlib.sha256()
    for p in module.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    pg = dist.GroupMember.WORLD

    # MLP, float64, and a LeNet, float32
    torch.manual_seed(rank)
    ddp = train_pair(mlp(torch.float64), (6,), np.float64, 1e-12, rank, world)
    assert list(ddp.state_dict())[0] == "module.0.weight", list(ddp.state_dict())
    final = digest(ddp.module)
    torch.manual_seed(10 + rank)
    train_pair(LeNet(num_classes=3), (3, 32, 32), np.float32, 1e-5, rank, world)

    # buffers: rank 0's at construction and, with broadcast_buffers, before each forward
    ddp = DDP(Scaled(rank + 1.0))
    assert ddp.module.scale.item() == 1.0
    ddp.module.scale.fill_(rank + 5.0)
    ddp(torch.ones(2, dtype=torch.float64)).sum().backward()
    assert ddp.module.scale.item() == 5.0
    assert ddp.module.weight.grad.tolist() == [5.0, 5.0]
    ddp = DDP(Scaled(rank + 1.0), broadcast_buffers=False)
    ddp.module.scale.fill_(rank + 5.0)
    ddp(torch.ones(2, dtype=torch.float64)).sum().backward()
    assert ddp.module.scale.item() == rank + 5.0

    # buckets: reverse registration order, small caps split them
    torch.manual_seed(0)
    small = DDP(mlp(torch.float64), bucket_cap_mb=1e-4)
    order = [i for b in small._buckets for i in b.indices]
    assert order == sorted(order, reverse=True), order
    assert len(small._buckets) > 1
    mixed = nn.Sequential(nn.Linear(3, 3).double(), nn.Linear(3, 3), nn.Linear(3, 3).double())
    for b in DDP(mixed)._buckets:
        assert len({str(mixed.get_parameter(n).dtype) for n in names(mixed, b)}) == 1
    assert len(DDP(mixed)._buckets) == 2

    # no_sync: two accumulated micro-batches equal one step on the whole batch
    torch.manual_seed(rank)
    model = mlp(torch.float64)
    ddp = DDP(model)
    ref = copy.deepcopy(ddp.module)
    x, y = batch(7, 4 * world, (6,), np.float64)
    before = pg.comm_bytes.get("all_reduce", 0)
    with ddp.no_sync():
        part = slice(4 * rank, 4 * rank + 2)
        (nn.functional.mse_loss(ddp(x[part]), y[part]) / 2).backward()
    assert pg.comm_bytes.get("all_reduce", 0) == before, "no_sync communicated"
    part = slice(4 * rank + 2, 4 * rank + 4)
    (nn.functional.mse_loss(ddp(x[part]), y[part]) / 2).backward()
    nn.functional.mse_loss(ref(x), y).backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-12)

    # frozen parameters are never communicated: only the head's bytes go to all_reduce
    torch.manual_seed(0)
    frozen = mlp(torch.float64)
    for p in list(frozen.parameters())[:4]:
        p.requires_grad_(False)
    ddp = DDP(frozen)
    x, y = batch(8, 2 * world, (6,), np.float64)
    before = pg.comm_bytes.get("all_reduce", 0)
    nn.functional.mse_loss(ddp(x[2 * rank : 2 * rank + 2]), y[2 * rank : 2 * rank + 2]).backward()
    sent = pg.comm_bytes["all_reduce"] - before
    assert sent == (8 * 3 + 3) * 8, sent
    assert all(p.grad is None for p in list(frozen.parameters())[:4])

    # find_unused_parameters: the unused layer keeps no gradient, the others are reduced
    torch.manual_seed(rank)
    model = WithUnused().double()
    ddp = DDP(model, find_unused_parameters=True)
    ref = copy.deepcopy(ddp.module)
    x = torch.tensor(np.random.default_rng(9).standard_normal((2 * world, 4)))
    for _ in range(2):
        ddp.zero_grad()
        ddp(x[2 * rank : 2 * rank + 2]).pow(2).mean().backward()
    ref(x).pow(2).mean().backward()
    assert model.unused.weight.grad is None
    np.testing.assert_allclose(
        model.a.weight.grad.numpy(), ref.a.weight.grad.numpy(), rtol=1e-12, atol=1e-12
    )

    # without it, the next forward raises PyTorch's error
    torch.manual_seed(0)
    ddp = DDP(WithUnused().double())
    ddp(x[:2]).sum().backward()
    try:
        ddp(x[:2])
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
    else:
        raise AssertionError("an unused parameter must raise at the next forward")

    # PyTorch's construction errors, on every rank
    frozen_only = nn.Linear(2, 2).requires_grad_(False)
    expect(
        RuntimeError,
        "doesn't have any parameter that requires a gradient",
        lambda: DDP(frozen_only),
    )
    expect(
        ValueError,
        "device_ids and output_device arguments only work",
        lambda: DDP(nn.Linear(2, 2), device_ids=[0]),
    )
    uneven = nn.Sequential(*[nn.Linear(2, 2) for _ in range(1 + (rank == world - 1))])
    expect(RuntimeError, "DDP expects same model across all ranks", lambda: DDP(uneven))

    # every rank holds the same bits
    hashes: list[Any] = [None] * world
    dist.all_gather_object(hashes, final)
    assert len(set(hashes)) == 1, hashes
    dist.barrier()
    print(f"OK {rank}", flush=True)
    if rank == 0:
        print(f"HASH {final}", flush=True)


if __name__ == "__main__":
    main()
