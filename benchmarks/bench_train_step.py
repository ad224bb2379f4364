"""Training steps (forward, loss, backward, optimizer step), rustgrad beside PyTorch.

Three workloads, each timed per step with the frameworks alternating every repetition
so that machine noise hits both alike; medians are compared:

- ``mlp-sgd``: MLP 784-1024-1024-10 (ReLU), batch 64, cross_entropy, SGD with momentum
  0.9 and weight decay 1e-4;
- ``mlp-adam``: the same MLP with Adam (lr 1e-3);
- ``lenet``: the seed notes' LeNet (conv 3→6 k5, max-pool 2, conv 6→16 k5, max-pool 2,
  linear 400→120→84→10) on a batch of 64 3x32x32 images, SGD with momentum.

Both frameworks start from the same weights (PyTorch's, copied through numpy). Before
timing, the script checks that rustgrad gives bitwise-identical parameters after five
steps with 1 and with 2 threads.

    .venv/bin/python benchmarks/bench_train_step.py [--reps N] [--threads T]
        [--workload mlp-sgd|mlp-adam|lenet|all]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from _torch_site import find_torch_site

BATCH = 64


def mlp(fw: ModuleType) -> Any:
    """MLP 784-1024-1024-10 with ReLU."""
    nn: Any = fw.nn
    return nn.Sequential(
        nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )


def lenet(fw: ModuleType) -> Any:
    """The seed notes' TheModelClass."""
    nn: Any = fw.nn
    return nn.Sequential(
        nn.Conv2d(3, 6, 5),
        nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(400, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, 10),
    )


WORKLOADS: dict[str, tuple[Callable[[ModuleType], Any], tuple[int, ...], str]] = {
    "mlp-sgd": (mlp, (BATCH, 784), "sgd"),
    "mlp-adam": (mlp, (BATCH, 784), "adam"),
    "lenet": (lenet, (BATCH, 3, 32, 32), "sgd"),
}


def make_optimizer(fw: ModuleType, model: Any, kind: str) -> Any:
    optim: Any = fw.optim
    if kind == "sgd":
        return optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    return optim.Adam(model.parameters(), lr=1e-3)


class Trainer:
    """One framework's model, optimizer and fixed batch."""

    def __init__(
        self, fw: ModuleType, workload: str, weights: list[np.ndarray], x: np.ndarray, y: Any
    ) -> None:
        build, _, kind = WORKLOADS[workload]
        self.fw = fw
        self.model = build(fw)
        with fw.no_grad():
            for p, w in zip(self.model.parameters(), weights, strict=True):
                p.copy_(fw.tensor(w))
        self.optimizer = make_optimizer(fw, self.model, kind)
        self.x = fw.tensor(x)
        self.y = fw.tensor(y)
        self.loss_fn: Any = fw.nn.functional.cross_entropy

    def step(self) -> int:
        """One training step; returns its wall time in ns."""
        start = time.perf_counter_ns()
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return time.perf_counter_ns() - start

    def parameters(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.model.parameters()]


def check_thread_determinism(
    rustgrad: ModuleType, workload: str, weights: Any, x: Any, y: Any
) -> None:
    """rustgrad's parameters after 5 steps are bitwise identical for 1 and 2 threads."""
    finals = []
    for threads in (1, 2):
        rustgrad.set_num_threads(threads)
        trainer = Trainer(rustgrad, workload, weights, x, y)
        for _ in range(5):
            trainer.step()
        finals.append(trainer.parameters())
    for a, b in zip(*finals, strict=True):
        assert a.tobytes() == b.tobytes(), f"{workload}: 1 and 2 threads differ"


def run(workload: str, frameworks: dict[str, ModuleType], reps: int, threads: int) -> None:
    rng = np.random.default_rng(0)
    _, shape, _ = WORKLOADS[workload]
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int64)
    reference = WORKLOADS[workload][0](frameworks.get("torch", frameworks["rustgrad"]))
    weights = [p.detach().numpy().copy() for p in reference.parameters()]

    check_thread_determinism(frameworks["rustgrad"], workload, weights, x, y)
    for fw in frameworks.values():
        fw.set_num_threads(threads)
    trainers = {name: Trainer(fw, workload, weights, x, y) for name, fw in frameworks.items()}
    samples: dict[str, list[float]] = {name: [] for name in frameworks}
    names = list(frameworks)
    for rep in range(reps + 5):
        for name in names if rep % 2 == 0 else names[::-1]:
            elapsed = trainers[name].step() / 1e6
            if rep >= 5:
                samples[name].append(elapsed)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    print(f"{workload}: {threads} thread(s), median of {reps} steps, ms per step")
    for name in frameworks:
        ratio = f"  ({medians[name] / medians['torch']:.2f}x torch)" if "torch" in medians else ""
        print(f"  {name:<10} {medians[name]:>8.3f}{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="timed steps")
    parser.add_argument("--threads", type=int, default=1, help="threads for both frameworks")
    parser.add_argument("--workload", default="all", choices=[*WORKLOADS, "all"])
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    args = parser.parse_args()

    import rustgrad
    import rustgrad.nn
    import rustgrad.optim  # noqa: F401

    frameworks: dict[str, ModuleType] = {"rustgrad": rustgrad}
    site = find_torch_site(args.torch_site)
    if site is not None:
        sys.path.append(site)
        try:
            import torch

            torch.manual_seed(0)
            frameworks["torch"] = torch
        except ImportError:
            print("torch not importable: timing rustgrad alone", file=sys.stderr)
    rustgrad.manual_seed(0)
    for workload in WORKLOADS if args.workload == "all" else [args.workload]:
        run(workload, frameworks, args.reps, args.threads)


if __name__ == "__main__":
    main()
