"""Thread scaling, rustgrad beside PyTorch: issue 20's table for a list of thread counts.

Workloads (float32):

- ``matmul256`` / ``matmul1024`` / ``matmul2048``: ``a @ b`` of square matrices, GFLOP/s;
- ``mlp-sgd`` / ``mlp-adam``: MLP 784-1024-1024-10, batch 128, cross_entropy, SGD with
  momentum (bench_train_step.py's model and optimizers) or Adam;
- ``resnet-train`` / ``resnet-eval`` / ``resnet-frozen``: ResNet-18 at batch 16 of
  3x64x64, a full SGD training step, eval under ``no_grad``, and the seed notes'
  fine-tune step (frozen base, new ``fc``, only ``fc`` optimised) (bench_resnet18.py's
  runner);
- ``resnet224``: the full ResNet-18 training step at batch 32 of 3x224x224;
- ``chain``: the small-op chain, forward + backward, time per op (bench_chain.py).

Every (thread count, workload, framework) runs in its own fresh process with
``OMP_NUM_THREADS`` = ``RUSTGRAD_NUM_THREADS`` = n (and ``set_num_threads(n)``); the two
frameworks alternate (``--rounds`` processes each, order swapped every round) and the
samples of all rounds are pooled into medians. Each child reports, besides the step
times, CPU time / wall time over its timed steps (``getrusage``: how many cores the
steps kept busy) and the peak RSS growth of its first steps (the high-water mark, reset after
the model and batch exist, minus the RSS then; Linux only). PyTorch comes from
``--torch-site``, else the repository's ``.torch-venv``, else the running Python; the
ResNet-18 is torchvision's when it imports, else the same architecture defined here.
Only ``import rustgrad`` is needed, so this runs from an installed wheel anywhere.

    python benchmarks/bench_scaling.py [--threads 1,2] [--quick]
        [--workloads matmul2048,mlp-sgd,...] [--rounds N] [--markdown PATH]
        [--torch-site PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from _torch_site import find_torch_site

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (timed steps, warm-up steps) of a full run; --quick uses QUICK_REPS.
WORKLOADS: dict[str, tuple[int, int]] = {
    "matmul256": (200, 20),
    "matmul1024": (20, 3),
    "matmul2048": (6, 1),
    "mlp-sgd": (30, 5),
    "mlp-adam": (30, 5),
    "resnet-train": (10, 2),
    "resnet-eval": (10, 2),
    "resnet-frozen": (10, 2),
    "resnet224": (3, 1),
    "chain": (300, 30),
}
QUICK_REPS: dict[str, tuple[int, int]] = {
    name: (2 if name != "chain" else 20, 1) for name in WORKLOADS
} | {"resnet224": (1, 1)}
LABELS = {
    "matmul256": "matmul 256 (GFLOP/s)",
    "matmul1024": "matmul 1024 (GFLOP/s)",
    "matmul2048": "matmul 2048 (GFLOP/s)",
    "mlp-sgd": "MLP 784-1024-1024-10 b128 SGD step (ms)",
    "mlp-adam": "MLP 784-1024-1024-10 b128 Adam step (ms)",
    "resnet-train": "ResNet-18 train b16 3x64x64 (ms)",
    "resnet-eval": "ResNet-18 eval no_grad b16 3x64x64 (ms)",
    "resnet-frozen": "ResNet-18 seed fine-tune step (ms)",
    "resnet224": "ResNet-18 train b32 3x224x224 (ms)",
    "chain": "small-op chain fwd+bwd (us/op)",
}
MLP_BATCH = 128


# --------------------------------------------------------------------------- child


def _import_framework(name: str, site: str | None) -> ModuleType:
    if name == "rustgrad":
        import rustgrad
        import rustgrad.models
        import rustgrad.nn
        import rustgrad.optim  # noqa: F401

        return rustgrad
    if site is not None:
        sys.path.append(site)
    import torch

    return torch


def _torch_resnet18(torch: Any) -> Any:
    """torchvision's resnet18 architecture (BasicBlock, [2, 2, 2, 2], 1000 classes) for a
    PyTorch without torchvision; the timing depends on the shapes only."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
            for i, (cin, cout, stride) in enumerate(widths, 1):
                setattr(
                    self, f"layer{i}", nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1))
                )
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet18()


def _resnet_step(fw: ModuleType, workload: str) -> Callable[[], None]:
    """bench_resnet18.py's Runner at this workload's batch shape."""
    import bench_resnet18

    if workload == "resnet224":
        bench_resnet18.BATCH, bench_resnet18.SHAPE = 32, (32, 3, 224, 224)
    if fw.__name__ == "torch":
        try:
            import torchvision  # noqa: F401
        except ImportError:
            bench_resnet18.build = lambda torch, _weights: _torch_resnet18(torch)
    kind = {"resnet-eval": "eval", "resnet-frozen": "frozen"}.get(workload, "full")
    fw.manual_seed(0)
    runner = bench_resnet18.Runner(fw, kind, None)  # type: ignore[arg-type]
    return lambda: None if runner.step() is None else None


def _mlp_step(fw: ModuleType, workload: str) -> Callable[[], None]:
    """bench_train_step.py's Trainer on a batch of 128, seeded weights."""
    import bench_train_step

    rng = np.random.default_rng(0)
    model = bench_train_step.mlp(fw)
    weights = [
        (rng.standard_normal(tuple(p.shape)) / np.sqrt(p.shape[-1])).astype(np.float32)
        for p in model.parameters()
    ]
    x = rng.standard_normal((MLP_BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, MLP_BATCH).astype(np.int64)
    trainer = bench_train_step.Trainer(fw, workload, weights, x, y)
    return lambda: None if trainer.step() is None else None


def _matmul_step(fw: ModuleType, n: int) -> Callable[[], None]:
    rng = np.random.default_rng(0)
    a = fw.from_numpy(rng.standard_normal((n, n)).astype(np.float32))
    b = fw.from_numpy(rng.standard_normal((n, n)).astype(np.float32))

    def step() -> None:
        a @ b

    return step


def _chain_step(fw: ModuleType) -> Callable[[], None]:
    import bench_chain

    return lambda: None if bench_chain.run_once(fw) is None else None


def make_step(fw: ModuleType, workload: str) -> Callable[[], None]:
    """The workload's step for ``fw``, built (model, optimizer, batch) and ready."""
    if workload.startswith("matmul"):
        return _matmul_step(fw, int(workload.removeprefix("matmul")))
    if workload.startswith("mlp"):
        return _mlp_step(fw, workload)
    if workload.startswith("resnet"):
        return _resnet_step(fw, workload)
    return _chain_step(fw)


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


def cpu_seconds() -> float:
    """User + system CPU time of this process, all its threads (``getrusage``: microsecond
    resolution; ``os.times`` where it is missing)."""
    try:
        import resource

        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    except ImportError:
        times = os.times()
        return times.user + times.system


def child(name: str, workload: str, threads: int, reps: int, warmup: int, site: str | None) -> None:
    """Runs one workload in this (fresh) process and prints its results as JSON."""
    sys.path.insert(0, HERE)
    fw = _import_framework(name, site)
    fw.set_num_threads(threads)
    step = make_step(fw, workload)
    # Peak RSS growth of the first steps: what they allocate, not the weights.
    peak_ok = _reset_peak()
    base = _status_kib("VmRSS")
    for _ in range(max(warmup, 1)):
        step()
    peak = _status_kib("VmHWM")
    growth = (peak - base) / 1024 if peak_ok and peak is not None and base is not None else None
    times = []
    cpu_start, wall_start = cpu_seconds(), time.perf_counter()
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    wall = time.perf_counter() - wall_start
    cpu = cpu_seconds() - cpu_start
    print(
        json.dumps(
            {
                "times": times,
                "cpu_per_wall": cpu / wall if wall > 0 else None,
                "peak_mib": growth,
                "version": getattr(fw, "__version__", "?"),
            }
        )
    )


# -------------------------------------------------------------------------- parent


def run_child(
    name: str, workload: str, threads: int, reps: int, warmup: int, site: str | None
) -> dict[str, Any]:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["RUSTGRAD_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    command = [sys.executable, os.path.abspath(__file__), "--child", name, workload]
    command += ["--threads", str(threads), "--reps", str(reps), "--warmup", str(warmup)]
    if site is not None:
        command += ["--torch-site", site]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} {workload} ({threads} threads) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def torch_available(site: str | None) -> bool:
    command = [sys.executable, "-c", "import sys; sys.path.append(sys.argv[1]); import torch"]
    found = subprocess.run([*command, site or ""], capture_output=True, check=False)
    return found.returncode == 0


def value(workload: str, seconds: float) -> float:
    """What the table shows: GFLOP/s for matmul, us per op for the chain, else ms."""
    if workload.startswith("matmul"):
        n = int(workload.removeprefix("matmul"))
        return 2 * n**3 / seconds / 1e9
    if workload == "chain":
        import bench_chain

        return seconds * 1e6 / bench_chain.CHAIN_LENGTH
    return seconds * 1e3


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated")
    parser.add_argument("--quick", action="store_true", help="a few steps each: a smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="processes per framework")
    parser.add_argument("--markdown", metavar="PATH", help="also write the table there")
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    parser.add_argument(
        "--child", nargs=2, metavar=("FRAMEWORK", "WORKLOAD"), help=argparse.SUPPRESS
    )
    parser.add_argument("--reps", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    site = find_torch_site(args.torch_site)
    if args.child:
        name, workload = args.child
        child(name, workload, int(args.threads), args.reps, args.warmup, site)
        return

    sys.path.insert(0, HERE)
    threads = [int(t) for t in args.threads.split(",")]
    workloads = args.workloads.split(",")
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    rounds = args.rounds or (1 if args.quick else 2)
    names = ["rustgrad"] + (["torch"] if torch_available(site) else [])
    if len(names) == 1:
        print("torch not importable: timing rustgrad alone", file=sys.stderr)
    rows = []
    for n in threads:
        for workload in workloads:
            reps, warmup = (QUICK_REPS if args.quick else WORKLOADS)[workload]
            samples: dict[str, list[float]] = {name: [] for name in names}
            cpu: dict[str, list[float]] = {name: [] for name in names}
            peak: dict[str, list[float]] = {name: [] for name in names}
            versions: dict[str, str] = {}
            for r in range(rounds):
                for name in names if r % 2 == 0 else names[::-1]:
                    result = run_child(name, workload, n, reps, warmup, site)
                    samples[name] += result["times"]
                    if result["cpu_per_wall"] is not None:
                        cpu[name].append(result["cpu_per_wall"])
                    if result["peak_mib"] is not None:
                        peak[name].append(result["peak_mib"])
                    versions[name] = result["version"]
            med = {k: value(workload, statistics.median(v)) for k, v in samples.items()}
            row = {
                "threads": n,
                "workload": workload,
                "value": med,
                "cpu": {k: statistics.median(v) if v else None for k, v in cpu.items()},
                "peak": {k: statistics.median(v) if v else None for k, v in peak.items()},
                "versions": versions,
            }
            rows.append(row)
            print(one_line(row), flush=True)
    table = markdown(rows, names, args.quick)
    print()
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(table + "\n")


def ratio(row: dict[str, Any], key: str) -> float | None:
    values = row[key]
    if "torch" not in values or values.get("torch") in (None, 0) or values["rustgrad"] is None:
        return None
    return values["rustgrad"] / values["torch"]


def one_line(row: dict[str, Any]) -> str:
    parts = [f"{row['threads']:>3} thr  {LABELS[row['workload']]:<44}"]
    for name, v in row["value"].items():
        parts.append(f"{name} {v:10.3f} (cpu/wall {fmt(row['cpu'][name], 1)})")
    r = ratio(row, "value")
    if r is not None:
        parts.append(f"ratio {r:.2f}")
    return "  ".join(parts)


def markdown(rows: list[dict[str, Any]], names: list[str], quick: bool) -> str:
    """The table for BENCHMARKS.md: one row per (workload, thread count)."""
    first = rows[0]["versions"] if rows else {}
    header = [
        f"`bench_scaling.py{' --quick' if quick else ''}`, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in first.items())
        + f", {time.strftime('%Y-%m-%d')}. Ratio = rustgrad / PyTorch (time: lower is "
        "better; GFLOP/s: higher is better). CPU/wall = CPU time / wall time of the "
        "timed steps; peak = peak RSS growth (MiB) of the first steps.",
        "",
        "| workload | threads | rustgrad | PyTorch | ratio | CPU/wall rg / pt "
        "| peak MiB rg / pt (ratio) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines = header
    for row in sorted(rows, key=lambda r: (list(WORKLOADS).index(r["workload"]), r["threads"])):
        v, c, p = row["value"], row["cpu"], row["peak"]
        pr = ratio(row, "peak")
        lines.append(
            f"| {LABELS[row['workload']]} | {row['threads']} | {fmt(v['rustgrad'])} "
            f"| {fmt(v.get('torch'))} | {fmt(ratio(row, 'value'))} "
            f"| {fmt(c['rustgrad'], 1)} / {fmt(c.get('torch'), 1)} "
            f"| {fmt(p['rustgrad'], 1)} / {fmt(p.get('torch'), 1)} ({fmt(pr)}) |"
        )
    if len(names) == 1:
        lines.append("")
        lines.append("PyTorch was not importable: rustgrad alone.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
