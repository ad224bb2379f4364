"""Data-parallel training launched the torchrun way: our own script, written in the
style of the DDP tutorial of pytorch/examples (a ``Trainer`` class, ``ddp_setup``, a
snapshot to resume from), not a copy of it. It uses only PyTorch's API, reached through
``torch.``, so with ``import torch`` in place of its one rustgrad import it runs
unchanged under PyTorch's ``torchrun``:

    .venv/bin/python -m rustgrad.distributed.run --nproc-per-node 2 \\
        examples/ddp_train.py 10 5                  # rustgrad (MPI underneath)
    torchrun --nproc-per-node 2 ddp_train.py 10 5   # PyTorch, after `import torch`

Arguments: total epochs, save-every (epochs), ``--batch-size`` (per rank),
``--snapshot`` (path; a run that finds it resumes after its epoch). The data are
synthetic (a noisy linear map, seeded); each rank trains on its ``DistributedSampler``
shard, DDP averages the gradients, and rank 0 prints the mean loss of each epoch over
all ranks and writes the snapshot.
"""

from __future__ import annotations

import argparse
import os

import rustgrad as torch  # `import torch` runs this file under PyTorch's torchrun


class RegressionData(torch.utils.data.Dataset):
    """``size`` samples of ``y = x @ w + noise``, the same on every rank."""

    def __init__(self, size: int, features: int = 16) -> None:
        g = torch.Generator().manual_seed(2024)
        self.x = torch.randn(size, features, generator=g)
        w = torch.randn(features, 1, generator=g)
        self.y = torch.tanh(self.x @ w) + 0.05 * torch.randn(size, 1, generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        return self.x[index], self.y[index]


def ddp_setup() -> None:
    """Joins the process group; torchrun (or rustgrad's launcher) set RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR and MASTER_PORT."""
    torch.distributed.init_process_group(backend="gloo")


class Trainer:
    """Runs the epochs on this rank: DDP model, sharded data, snapshots from rank 0."""

    def __init__(
        self,
        model: torch.nn.Module,
        data: torch.utils.data.DataLoader,
        optimizer: torch.optim.Optimizer,
        save_every: int,
        snapshot_path: str,
    ) -> None:
        self.rank = torch.distributed.get_rank()
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.data = data
        self.optimizer = optimizer
        self.save_every = save_every
        self.snapshot_path = snapshot_path
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path, model)
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.losses: list[float] = []

    def _load_snapshot(self, path: str, model: torch.nn.Module) -> None:
        snapshot = torch.load(path)
        model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        if self.rank == 0:
            print(f"resuming from the snapshot after epoch {self.epochs_run}", flush=True)

    def _run_batch(self, source: torch.Tensor, targets: torch.Tensor) -> float:
        self.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch: int) -> float:
        self.data.sampler.set_epoch(epoch)
        total = torch.zeros(2, dtype=torch.float64)
        for source, targets in self.data:
            loss = self._run_batch(source, targets)
            total += torch.tensor([loss * len(source), len(source)], dtype=torch.float64)
        # the mean over every sample of every rank
        torch.distributed.all_reduce(total, op=torch.distributed.ReduceOp.SUM)
        return (total[0] / total[1]).item()

    def _save_snapshot(self, epoch: int) -> None:
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch + 1}
        torch.save(snapshot, self.snapshot_path)
        print(f"epoch {epoch}: snapshot saved to {self.snapshot_path}", flush=True)

    def train(self, max_epochs: int) -> None:
        for epoch in range(self.epochs_run, max_epochs):
            mean = self._run_epoch(epoch)
            self.losses.append(mean)
            if self.rank == 0:
                print(f"epoch {epoch} loss {mean:.6f} (local rank {self.local_rank})", flush=True)
                if (epoch + 1) % self.save_every == 0:
                    self._save_snapshot(epoch)


def load_train_objs() -> tuple[torch.utils.data.Dataset, torch.nn.Module, torch.optim.Optimizer]:
    dataset = RegressionData(1024)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 1),
    )  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return dataset, model, optimizer


def prepare_dataloader(dataset: torch.utils.data.Dataset, batch_size: int):
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,  # the sampler shuffles
        sampler=torch.utils.data.distributed.DistributedSampler(dataset),
    )


def main(save_every: int, total_epochs: int, batch_size: int, snapshot_path: str) -> None:
    ddp_setup()
    torch.manual_seed(torch.distributed.get_rank())  # DDP broadcasts rank 0's weights
    dataset, model, optimizer = load_train_objs()
    trainer = Trainer(
        model, prepare_dataloader(dataset, batch_size), optimizer, save_every, snapshot_path
    )
    trainer.train(total_epochs)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="torchrun-style DDP training")
    parser.add_argument("total_epochs", type=int, help="epochs to train")
    parser.add_argument("save_every", type=int, help="write a snapshot every N epochs")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank (32)")
    parser.add_argument("--snapshot", default="snapshot.pt", help="snapshot path")
    args = parser.parse_args()
    main(args.save_every, args.total_epochs, args.batch_size, args.snapshot)
