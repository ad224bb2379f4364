"""A training script written as for PyTorch's torchrun + DDP (gloo backend, CPU),
with ``import rustgrad as torch`` as its only change: everything else is reached
through ``torch.`` as a PyTorch script does. The same file with ``import torch`` runs
under PyTorch's ``torchrun``: tests/vectors/generate_ddp_torchrun.py records PyTorch's
losses, which tests/python/test_distributed_ddp.py compares with rustgrad's.

Synthetic regression data, DistributedSampler + DataLoader, DDP, ``set_epoch``, a
rank-0 checkpoint of ``model.module.state_dict()``; prints the mean training loss of
each epoch (averaged over ranks with all_reduce) on rank 0, and ``OK <rank>`` at the end.
"""

import argparse
import os
import tempfile

import rustgrad as torch


class SyntheticDataset(torch.utils.data.Dataset):
    def __init__(self, size: int) -> None:
        g = torch.Generator().manual_seed(1234)
        self.x = torch.randn(size, 20, generator=g)
        w = torch.randn(20, 1, generator=g)
        self.y = self.x @ w + 0.01 * torch.randn(size, 1, generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return self.x[i], self.y[i]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.distributed.init_process_group(backend="gloo")
    rank = torch.distributed.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    assert world_size == torch.distributed.get_world_size()

    torch.manual_seed(rank)  # different on each rank: DDP broadcasts rank 0's weights
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    ddp_model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.05)
    loss_fn = torch.nn.MSELoss()

    dataset = SyntheticDataset(512)
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=False, sampler=sampler
    )

    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(2, dtype=torch.float64)
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(x), y)
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(x), len(x)], dtype=torch.float64)
        torch.distributed.all_reduce(total, op=torch.distributed.ReduceOp.SUM)
        mean = (total[0] / total[1]).item()
        losses.append(mean)
        if rank == 0:
            print(f"epoch {epoch} loss {mean:.9e} (local rank {local_rank})", flush=True)

    if rank == 0:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "checkpoint.pt")
            torch.save(ddp_model.module.state_dict(), path)
            state = torch.load(path)
            assert set(state) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    torch.distributed.barrier()
    assert losses[-1] < 0.5 * losses[0], losses
    torch.distributed.destroy_process_group()
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
