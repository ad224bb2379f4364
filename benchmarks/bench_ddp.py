"""Data-parallel training on MPI: step time of DistributedDataParallel on 1 and 2
processes, bytes all-reduced per step, and how much of the all-reduce backward hides.

Two training steps (forward, cross_entropy, backward, SGD with momentum 0.9 over every
parameter, DDP with its default buckets):

- ``resnet18``: ``rustgrad.models.resnet18()`` (1000 classes), batch 16 of 3x64x64 per
  rank;
- ``mlp``: 784-1024-1024-10 with ReLU, batch 128 per rank.

Each process count runs as one job of ``python -m rustgrad.distributed.run
--nproc-per-node N`` with ``RUSTGRAD_NUM_THREADS=1`` on every rank (so 2 processes use
2 cores, 1 process one core). Per model and job: one warm-up step, then ``--steps``
timed steps; reported:

- ``step ms``: the median step time (the slowest rank's);
- ``MiB/step``: bytes this rank handed to all-reduce per step (the process group's
  ``comm_bytes``; the same on every rank);
- ``exposed ms``: the median time backward's last gradient hook spends waiting for the
  buckets' all-reduces (the communication not hidden behind backward);
- ``alone ms``: the median time of the same all-reduces (same buckets, launched
  together and waited) with nothing else running;
- ``hidden``: ``1 - exposed / alone``, clamped to [0, 1]: the fraction of the
  all-reduce time hidden behind backward.

``--pingpong``: 2 ranks send a float32 tensor back and forth through
``rustgrad.distributed.send``/``recv`` (mpi4py, loopback), ``10 * steps`` round trips
per size up to 64 KiB, ``steps`` above (8 B to 32 MiB); per size the median one-way
time (half a round trip); the latency (8 bytes), the bandwidth (largest size), and a
least-squares fit ``t = latency + bytes / bandwidth`` over all sizes: the inputs of the
scaling model in docs/distributed_scaling.md.

    .venv/bin/python benchmarks/bench_ddp.py [--steps N] [--procs 1,2]
        [--model resnet18|mlp|all] [--json PATH]
    .venv/bin/python benchmarks/bench_ddp.py --pingpong [--json PATH]

Run it on an idle machine: both processes share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
MODELS = ("resnet18", "mlp")


# --- driver ---------------------------------------------------------------------------


def launch(nproc: int, args: list[str]) -> dict[str, Any]:
    """Runs this script's worker on ``nproc`` ranks; returns rank 0's RESULT."""
    env = dict(os.environ, RUSTGRAD_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = [
        sys.executable,
        "-m",
        "rustgrad.distributed.run",
        "--nproc-per-node",
        str(nproc),
        str(Path(__file__).resolve()),
        *args,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_ddp: the {nproc}-process job failed:\n{proc.stdout}{proc.stderr}")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    sys.exit(f"bench_ddp: no result from the {nproc}-process job:\n{proc.stdout}{proc.stderr}")


def drive(args: argparse.Namespace) -> None:
    results: dict[str, Any] = {}
    if args.pingpong:
        results["pingpong"] = launch(2, ["--worker", "pingpong", "--steps", str(args.steps)])
        rows = results["pingpong"]["sizes"]
        print(f"{'bytes':>12}{'one-way us':>14}{'MB/s':>12}")
        for row in rows:
            us = row["seconds"] * 1e6
            print(f"{row['bytes']:>12}{us:>14.1f}{row['bytes'] / row['seconds'] / 1e6:>12.1f}")
        fit = results["pingpong"]["fit"]
        print(
            f"latency (8 B): {results['pingpong']['latency_s'] * 1e6:.1f} us; bandwidth "
            f"(largest): {results['pingpong']['bandwidth_Bps'] / 1e9:.2f} GB/s; fit: "
            f"{fit['latency_s'] * 1e6:.1f} us + bytes / {fit['bandwidth_Bps'] / 1e9:.2f} GB/s"
        )
    else:
        models = MODELS if args.model == "all" else (args.model,)
        procs = [int(p) for p in args.procs.split(",")]
        print(
            f"{'model':10}{'procs':>6}{'step ms':>10}{'MiB/step':>10}{'exposed ms':>12}"
            f"{'alone ms':>10}{'hidden':>8}"
        )
        for model in models:
            for nproc in procs:
                r = launch(nproc, ["--worker", model, "--steps", str(args.steps)])
                results[f"{model}/{nproc}"] = r
                print(
                    f"{model:10}{nproc:>6}{r['step_s'] * 1e3:>10.1f}"
                    f"{r['allreduce_bytes_per_step'] / MIB:>10.2f}"
                    f"{r['exposed_s'] * 1e3:>12.2f}{r['alone_s'] * 1e3:>10.2f}"
                    f"{r['hidden_fraction']:>8.2f}"
                )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


# --- workers (one per rank, under the launcher) ---------------------------------------


def build(name: str) -> tuple[Any, Any, Any]:
    """The model and one batch (per rank) of a workload."""
    import rustgrad
    import rustgrad.models
    import rustgrad.nn as nn

    rustgrad.manual_seed(0)
    if name == "resnet18":
        model = rustgrad.models.resnet18()
        x = rustgrad.randn(16, 3, 64, 64)
        y = rustgrad.randint(0, 1000, (16,))
    else:
        model = nn.Sequential(
            nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )
        x = rustgrad.randn(128, 784)
        y = rustgrad.randint(0, 10, (128,))
    return model, x, y


def train_worker(name: str, steps: int) -> None:
    import rustgrad
    import rustgrad.distributed as dist
    import rustgrad.nn.functional as F
    from rustgrad.distributed import distributed_c10d as c10d
    from rustgrad.nn.parallel import DistributedDataParallel

    dist.init_process_group(backend="gloo")
    pg = c10d._group(None)
    model, x, y = build(name)
    ddp = DistributedDataParallel(model)
    optimizer = rustgrad.optim.SGD(ddp.parameters(), lr=1e-3, momentum=0.9)

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        optimizer.step()

    step()  # warm-up
    dist.barrier()
    before = pg.comm_bytes.get("all_reduce", 0)
    times, waits = [], []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        waits.append(ddp._reduce_wait_s)
    sent = pg.comm_bytes.get("all_reduce", 0) - before

    # The same all-reduces alone: the buckets' flat buffers launched together, waited.
    flats = [
        rustgrad._rustgrad._ddp_flatten_bucket(
            b.spec, [ddp._params[i].grad for i in b.indices], ddp._world
        )
        for b in ddp._buckets
    ]
    alone = []
    for _ in range(max(3, steps)):
        dist.barrier()
        start = time.perf_counter()
        works = [dist.all_reduce(f, async_op=True) for f in flats]
        for w in works:
            w.wait()
        alone.append(time.perf_counter() - start)

    mine = {
        "step_s": statistics.median(times),
        "exposed_s": statistics.median(waits),
        "alone_s": statistics.median(alone),
    }
    everyone: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    if dist.get_rank() == 0:
        step_s = max(r["step_s"] for r in everyone)
        exposed = max(r["exposed_s"] for r in everyone)
        alone_s = max(r["alone_s"] for r in everyone)
        hidden = 0.0 if alone_s <= 0 else min(1.0, max(0.0, 1.0 - exposed / alone_s))
        result = {
            "model": name,
            "procs": dist.get_world_size(),
            "steps": steps,
            "threads_per_rank": rustgrad.get_num_threads(),
            "step_s": step_s,
            "allreduce_bytes_per_step": sent / steps,
            "buckets": len(ddp._buckets),
            "exposed_s": exposed,
            "alone_s": alone_s,
            "hidden_fraction": hidden,
        }
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def pingpong_worker(steps: int) -> None:
    import numpy as np
    import rustgrad
    import rustgrad.distributed as dist

    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    if dist.get_world_size() != 2:
        raise SystemExit("--pingpong needs exactly 2 ranks")
    rows = []
    for nbytes in [8 * 4**k for k in range(12)]:  # 8 B .. 32 MiB
        t = rustgrad.zeros(nbytes // 4)
        reps = 10 * steps if nbytes <= 64 * 1024 else steps
        dist.barrier()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            if rank == 0:
                dist.send(t, 1)
                dist.recv(t, 1)
            else:
                dist.recv(t, 0)
                dist.send(t, 0)
            times.append((time.perf_counter() - start) / 2)
        rows.append({"bytes": nbytes, "seconds": statistics.median(times)})
    if rank == 0:
        sizes = np.array([r["bytes"] for r in rows], dtype=np.float64)
        secs = np.array([r["seconds"] for r in rows])
        slope, intercept = np.polyfit(sizes, secs, 1)
        result = {
            "sizes": rows,
            "latency_s": rows[0]["seconds"],
            "bandwidth_Bps": rows[-1]["bytes"] / rows[-1]["seconds"],
            "fit": {"latency_s": float(intercept), "bandwidth_Bps": float(1.0 / slope)},
        }
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per job (20)")
    parser.add_argument("--procs", default="1,2", help="process counts (1,2)")
    parser.add_argument("--model", default="all", choices=(*MODELS, "all"))
    parser.add_argument("--pingpong", action="store_true", help="MPI loopback latency/bandwidth")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "pingpong":
        pingpong_worker(args.steps)
    elif args.worker is not None:
        train_worker(args.worker, args.steps)
    else:
        drive(args)


if __name__ == "__main__":
    main()
