"""ResNet-18 (1000 classes, batch 16 of 3x64x64), rustgrad beside PyTorch.

Three workloads, as the seed notes use the model:

- ``full``: a full training step (forward, cross_entropy, backward, SGD with momentum
  0.9 and weight decay 1e-4 over every parameter), train mode;
- ``frozen``: the seed notes' fine-tune step: every parameter frozen, ``fc`` replaced
  by ``nn.Linear(512, 100)``, ``SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)``
  (train mode, as in the notes);
- ``eval``: eval-mode inference under ``no_grad()``.

Time per step: the frameworks alternate every repetition (so that machine noise hits
both alike), medians compared. Peak RSS growth: each (framework, workload) runs in a
fresh spawned process: model, optimizer and batch built, the high-water mark reset
(/proc/self/clear_refs), then three steps; the growth from the RSS before them to the
high-water mark after them (Linux only). Both frameworks start from the same weights (torchvision's
initialisation, copied through numpy). PyTorch's model is torchvision's
``resnet18``; without torchvision (or torch) rustgrad is timed alone.

    .venv/bin/python benchmarks/bench_resnet18.py [--reps N] [--threads T]
        [--workload full|frozen|eval|all]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from types import ModuleType
from typing import Any

import numpy as np
from _torch_site import find_torch_site

BATCH = 16
SHAPE = (BATCH, 3, 64, 64)
WORKLOADS = ("full", "frozen", "eval")


def frameworks(site: str | None) -> dict[str, ModuleType]:
    """rustgrad, and torch when it and torchvision import from ``site``."""
    import rustgrad
    import rustgrad.models
    import rustgrad.optim  # noqa: F401

    found: dict[str, ModuleType] = {"rustgrad": rustgrad}
    if site is not None:
        sys.path.append(site)
        try:
            import torch
            import torchvision  # noqa: F401

            found["torch"] = torch
        except ImportError as error:
            print(f"{error.name} not importable: timing rustgrad alone", file=sys.stderr)
    return found


def build(fw: ModuleType, weights: dict[str, np.ndarray] | None) -> Any:
    """The framework's resnet18, with ``weights`` (a numpy state_dict) when given."""
    if fw.__name__ == "torch":
        import torchvision

        model = torchvision.models.resnet18()
    else:
        model = fw.models.resnet18()
    if weights is not None:
        model.load_state_dict({k: fw.from_numpy(v.copy()) for k, v in weights.items()})
    return model


class Runner:
    """One framework's model, optimizer and fixed batch for one workload."""

    def __init__(self, fw: ModuleType, workload: str, weights: dict[str, np.ndarray]) -> None:
        rng = np.random.default_rng(0)
        self.fw = fw
        self.workload = workload
        self.model = build(fw, weights)
        self.x = fw.from_numpy(rng.standard_normal(SHAPE).astype(np.float32))
        classes = 100 if workload == "frozen" else 1000
        self.y = fw.from_numpy(rng.integers(0, classes, BATCH).astype(np.int64))
        optim: Any = fw.optim
        if workload == "full":
            self.optimizer = optim.SGD(
                self.model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4
            )
        elif workload == "frozen":
            for param in self.model.parameters():
                param.requires_grad = False
            fw.manual_seed(0)
            self.model.fc = fw.nn.Linear(512, 100)
            self.optimizer = optim.SGD(self.model.fc.parameters(), lr=1e-2, momentum=0.9)
        else:
            self.model.eval()

    def step(self) -> int:
        """One step of the workload; returns its wall time in ns."""
        fw = self.fw
        start = time.perf_counter_ns()
        if self.workload == "eval":
            with fw.no_grad():
                self.model(self.x)
        else:
            self.optimizer.zero_grad()
            fw.nn.functional.cross_entropy(self.model(self.x), self.y).backward()
            self.optimizer.step()
        return time.perf_counter_ns() - start


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith(field + ":")).split()[1])


def _peak_child(name: str, workload: str, site: str | None, threads: int, queue: Any) -> None:
    """In a fresh process: peak RSS growth (KiB) over three steps, from the RSS once the
    model, optimizer and batch exist to the high-water mark (reset just before). It
    counts what the steps allocate (activations, saved tensors, gradients, momentum
    buffers), not the weights; warmed-up steps would show ~0, as the allocator reuses
    the first step's memory."""
    fw = frameworks(site)[name]
    fw.set_num_threads(threads)
    state = {k: v.detach().numpy() for k, v in build(fw, None).state_dict().items()}
    runner = Runner(fw, workload, state)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = _status_kib("VmRSS")
    for _ in range(3):
        runner.step()
    queue.put(_status_kib("VmHWM") - base)


def peak_rss_growth(name: str, workload: str, site: str | None, threads: int) -> int:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_peak_child, args=(name, workload, site, threads, queue))
    process.start()
    kib = queue.get(timeout=600)
    process.join()
    return kib


def run(workload: str, fws: dict[str, ModuleType], reps: int, threads: int, site: Any) -> None:
    reference = build(fws.get("torch", fws["rustgrad"]), None)
    weights = {k: v.detach().numpy().copy() for k, v in reference.state_dict().items()}
    for fw in fws.values():
        fw.set_num_threads(threads)
    runners = {name: Runner(fw, workload, weights) for name, fw in fws.items()}
    samples: dict[str, list[float]] = {name: [] for name in fws}
    names = list(fws)
    for rep in range(reps + 2):
        for name in names if rep % 2 == 0 else names[::-1]:
            elapsed = runners[name].step() / 1e6
            if rep >= 2:
                samples[name].append(elapsed)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    peaks = {name: peak_rss_growth(name, workload, site, threads) / 1024 for name in fws}
    print(f"resnet18 {workload}: batch {BATCH}x3x64x64, {threads} thread(s), median of {reps}")
    print(f"  {'':<10} {'ms/step':>10} {'peak RSS growth (MiB)':>24}")
    for name in fws:
        ratio = ""
        if "torch" in medians:
            ratio = (
                f"  ({medians[name] / medians['torch']:.2f}x torch time, "
                f"{peaks[name] / max(peaks['torch'], 0.1):.2f}x torch memory)"
            )
        print(f"  {name:<10} {medians[name]:>10.1f} {peaks[name]:>24.1f}{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="timed steps")
    parser.add_argument("--threads", type=int, default=1, help="threads for both frameworks")
    parser.add_argument("--workload", default="all", choices=[*WORKLOADS, "all"])
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    args = parser.parse_args()
    site = find_torch_site(args.torch_site)
    fws = frameworks(site)
    for fw in fws.values():
        fw.manual_seed(0)
    for workload in WORKLOADS if args.workload == "all" else [args.workload]:
        run(workload, fws, args.reps, args.threads, site)


if __name__ == "__main__":
    main()
