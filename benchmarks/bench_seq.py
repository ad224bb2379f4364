"""Sequence-model training steps, rustgrad beside PyTorch.

Workloads (``WORKLOADS``; add an entry to time another model):

- ``lstm``: 2-layer ``nn.LSTM`` (input 128, hidden 256), sequence 64, batch 32, MSE
  against a fixed target, SGD step;
- ``gru``: the same with ``nn.GRU``;
- ``transformer``: 2-layer ``nn.TransformerEncoder`` (d_model 256, 4 heads, feed-forward
  1024, dropout 0.1, causal mask), sequence 128, batch 16, MSE against a fixed target,
  SGD step.

Each framework runs in its own process (a fresh interpreter per round, so neither
warms the other's caches or allocator), the frameworks alternating round by round with
the same thread count (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
``RUSTGRAD_NUM_THREADS`` and ``set_num_threads``). Each round runs warm-up steps and
then timed steps; the medians over all rounds are compared, for 1 and 2 threads.

    .venv/bin/python benchmarks/bench_seq.py [--rounds N] [--steps N] [--threads 1,2]
        [--workload lstm|gru|all] [--torch-site PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from _torch_site import find_torch_site

SEQ, BATCH, INPUT, HIDDEN = 64, 32, 128, 256
T_SEQ, T_BATCH, T_MODEL, T_HEADS, T_FF = 128, 16, 256, 4, 1024


@dataclass
class Workload:
    """A model, its input and target shapes, and its loss."""

    build: Callable[[ModuleType], Any]
    input_shape: tuple[int, ...]
    target_shape: tuple[int, ...]
    loss: Callable[[ModuleType, Any, Any, Any], Any]


def _recurrent_loss(fw: ModuleType, model: Any, x: Any, y: Any) -> Any:
    out, _ = model(x)
    return fw.nn.functional.mse_loss(out, y)


def _transformer(fw: ModuleType) -> Any:
    layer = fw.nn.TransformerEncoderLayer(T_MODEL, T_HEADS, T_FF, dropout=0.1)
    return fw.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def _transformer_loss(fw: ModuleType, model: Any, x: Any, y: Any) -> Any:
    mask = fw.nn.Transformer.generate_square_subsequent_mask(x.shape[0])
    return fw.nn.functional.mse_loss(model(x, mask=mask, is_causal=True), y)


WORKLOADS: dict[str, Workload] = {
    "lstm": Workload(
        lambda fw: fw.nn.LSTM(INPUT, HIDDEN, num_layers=2),
        (SEQ, BATCH, INPUT),
        (SEQ, BATCH, HIDDEN),
        _recurrent_loss,
    ),
    "gru": Workload(
        lambda fw: fw.nn.GRU(INPUT, HIDDEN, num_layers=2),
        (SEQ, BATCH, INPUT),
        (SEQ, BATCH, HIDDEN),
        _recurrent_loss,
    ),
    "transformer": Workload(
        _transformer,
        (T_SEQ, T_BATCH, T_MODEL),
        (T_SEQ, T_BATCH, T_MODEL),
        _transformer_loss,
    ),
}


def worker(
    framework: str, workload: str, threads: int, warmup: int, steps: int, site: str | None
) -> None:
    """Runs in a child process: prints the step times (ms) as JSON."""
    if framework == "torch":
        if site:
            sys.path.append(site)
        import torch as fw
    else:
        import rustgrad as fw
        import rustgrad.nn
        import rustgrad.optim  # noqa: F401
    fw.set_num_threads(threads)
    w = WORKLOADS[workload]
    fw.manual_seed(0)
    model = w.build(fw)
    rng = np.random.default_rng(0)
    with fw.no_grad():
        for p in model.parameters():
            p.copy_(fw.tensor(rng.uniform(-0.06, 0.06, tuple(p.shape)).astype(np.float32)))
    x = fw.tensor(rng.standard_normal(w.input_shape).astype(np.float32))
    y = fw.tensor(rng.standard_normal(w.target_shape).astype(np.float32))
    opt = fw.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter_ns()
        opt.zero_grad()
        loss = w.loss(fw, model, x, y)
        loss.backward()
        opt.step()
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if i >= warmup:
            times.append(elapsed)
    print(json.dumps({"times": times, "loss": float(loss.item())}))


def run_child(
    framework: str, workload: str, threads: int, args: argparse.Namespace
) -> dict[str, Any]:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "RUSTGRAD_NUM_THREADS": str(threads),
    }
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        framework,
        "--workload",
        workload,
        "--threads",
        str(threads),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
    ]
    if args.torch_site:
        cmd += ["--torch-site", args.torch_site]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="processes per framework")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per process")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--workload", default="all", choices=[*WORKLOADS, "all"])
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    parser.add_argument("--worker", choices=["rustgrad", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(
            args.worker, args.workload, int(args.threads), args.warmup, args.steps, args.torch_site
        )
        return
    args.torch_site = find_torch_site(args.torch_site)
    frameworks = ["rustgrad"] + (["torch"] if args.torch_site else [])
    if not args.torch_site:
        print("torch not found: timing rustgrad alone", file=sys.stderr)
    workloads = list(WORKLOADS) if args.workload == "all" else [args.workload]
    for threads in [int(t) for t in args.threads.split(",")]:
        for workload in workloads:
            samples: dict[str, list[float]] = {f: [] for f in frameworks}
            for r in range(args.rounds):
                for fw in frameworks if r % 2 == 0 else frameworks[::-1]:
                    samples[fw] += run_child(fw, workload, threads, args)["times"]
            medians = {f: statistics.median(s) for f, s in samples.items()}
            print(
                f"{workload}: {threads} thread(s), median of {len(samples['rustgrad'])} "
                "steps, ms per training step"
            )
            for f in frameworks:
                ratio = (
                    f"  ({medians[f] / medians['torch']:.2f}x torch)" if "torch" in medians else ""
                )
                print(f"  {f:<10} {medians[f]:>9.2f}{ratio}", flush=True)


if __name__ == "__main__":
    main()
