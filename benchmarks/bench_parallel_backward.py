"""Parallel backward: two independent branches, timed with 1 and 2 threads.

Each branch is matmul + tanh + matmul + tanh on 512x512 float32 matrices; the two
branch sums are added. Only backward is timed (forward is rebuilt untimed each
repetition), the thread counts alternating every repetition. With 2 threads the
scheduler runs the two branches' nodes concurrently on the engine's pool (Note
[Parallel backward]); the gradients must be bitwise identical for both thread
counts, and the benchmark checks that.

    .venv/bin/python benchmarks/bench_parallel_backward.py [--reps N]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]

Without --torch-site the benchmark looks for .torch-venv next to the repository
(or /work/main/.torch-venv) and times PyTorch with the same thread counts when
torch is importable.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from types import ModuleType
from typing import Any

import numpy as np
from _torch_site import find_torch_site

SIZE = 512


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    ws = [(rng.standard_normal((SIZE, SIZE)) / np.sqrt(SIZE)).astype(np.float32) for _ in range(4)]
    return [x, *ws]


def backward_once(fw: ModuleType, arrays: list[np.ndarray]) -> tuple[int, list[Any]]:
    """Builds the two-branch graph, times its backward; returns (ns, gradients)."""
    x, w1, w2, w3, w4 = (fw.tensor(a, requires_grad=True) for a in arrays)
    a = ((x @ w1).tanh() @ w2).tanh()
    b = ((x @ w3).tanh() @ w4).tanh()
    loss = a.sum() + b.sum()
    start = time.perf_counter_ns()
    loss.backward()
    elapsed = time.perf_counter_ns() - start
    return elapsed, [t.grad for t in (x, w1, w2, w3, w4)]


def time_backward(fw: ModuleType, reps: int, arrays: list[np.ndarray]) -> dict[int, float]:
    """Median backward time (ms) with 1 and 2 threads, the two settings alternating
    every repetition so that machine noise hits both alike."""
    samples: dict[int, list[float]] = {1: [], 2: []}
    for rep in range(reps + 3):
        for threads in (1, 2) if rep % 2 == 0 else (2, 1):
            fw.set_num_threads(threads)
            elapsed = backward_once(fw, arrays)[0] / 1e6
            if rep >= 3:
                samples[threads].append(elapsed)
    return {t: statistics.median(s) for t, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30, help="timed repetitions per setting")
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    args = parser.parse_args()

    import rustgrad

    frameworks: dict[str, ModuleType] = {"rustgrad": rustgrad}
    site = find_torch_site(args.torch_site)
    if site is not None:
        sys.path.append(site)
        try:
            import torch

            frameworks["torch"] = torch
        except ImportError:
            print("torch not importable: timing rustgrad alone", file=sys.stderr)

    arrays = inputs()
    # The 2-thread gradients must be bitwise the 1-thread ones.
    rustgrad.set_num_threads(1)
    one = [g.numpy().copy() for g in backward_once(rustgrad, arrays)[1]]
    rustgrad.set_num_threads(2)
    two = [g.numpy().copy() for g in backward_once(rustgrad, arrays)[1]]
    if not all(np.array_equal(p, q) for p, q in zip(one, two)):
        raise SystemExit("rustgrad: 1- and 2-thread gradients differ")

    print(
        f"backward of two independent branches (matmul+tanh x2, {SIZE}x{SIZE} float32), "
        f"median of {args.reps} reps, ms"
    )
    print(f"{'framework':<10} {'version':<14} {'1 thread':>9} {'2 threads':>10} {'speedup':>8}")
    for name, fw in frameworks.items():
        times = time_backward(fw, args.reps, arrays)
        t1, t2 = times[1], times[2]
        version = getattr(fw, "__version__", "unknown")
        print(f"{name:<10} {version:<14} {t1:>9.2f} {t2:>10.2f} {t1 / t2:>7.2f}x")


if __name__ == "__main__":
    main()
