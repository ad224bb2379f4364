"""Pooling and normalisation kernels side by side with PyTorch.

Workloads (float32, both frameworks on the same thread count):

- max_pool2d, kernel 3, stride 2, padding 1, on 16x64x112x112: forward, and forward +
  backward (the gradient scattered to the argmax);
- batch_norm in training mode (batch statistics, running statistics updated, affine
  weight and bias) on 16x64x56x56: forward + backward.

Repetitions of the two frameworks alternate so that machine noise hits both alike;
the medians and the rustgrad / PyTorch ratios are printed.

    .venv/bin/python benchmarks/bench_nn_poolnorm.py [--reps N] [--threads T]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from types import ModuleType
from typing import Any, Callable

import numpy as np
from _torch_site import find_torch_site


def workloads(fw: ModuleType) -> dict[str, Callable[[], Any]]:
    """The timed closures for one framework (inputs built once, untimed)."""
    rng = np.random.default_rng(0)
    pool_x = rng.standard_normal((16, 64, 112, 112)).astype(np.float32)
    bn_x = rng.standard_normal((16, 64, 56, 56)).astype(np.float32)
    F = fw.nn.functional
    px = fw.tensor(pool_x)
    pxg = fw.tensor(pool_x, requires_grad=True)
    bx = fw.tensor(bn_x, requires_grad=True)
    w = fw.ones(64, requires_grad=True)
    b = fw.zeros(64, requires_grad=True)
    rm, rv = fw.zeros(64), fw.ones(64)

    def pool_forward() -> Any:
        return F.max_pool2d(px, 3, 2, 1)

    def pool_both() -> Any:
        out = F.max_pool2d(pxg, 3, 2, 1)
        return fw.autograd.grad(out, pxg, fw.ones_like(out))

    def bn_both() -> Any:
        out = F.batch_norm(bx, rm, rv, w, b, training=True)
        return fw.autograd.grad(out, [bx, w, b], fw.ones_like(out))

    return {
        "max_pool2d fwd 16x64x112x112 k3s2p1": pool_forward,
        "max_pool2d fwd+bwd": pool_both,
        "batch_norm train fwd+bwd 16x64x56x56": bn_both,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="timed repetitions per workload")
    parser.add_argument("--threads", type=int, default=2, help="threads for both frameworks")
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
    for fw in frameworks.values():
        fw.set_num_threads(args.threads)
    loads = {name: workloads(fw) for name, fw in frameworks.items()}
    names = list(loads["rustgrad"])
    samples: dict[tuple[str, str], list[float]] = {(f, n): [] for f in loads for n in names}
    for rep in range(args.reps + 2):
        order = list(loads) if rep % 2 == 0 else list(reversed(list(loads)))
        for n in names:
            for f in order:
                start = time.perf_counter()
                loads[f][n]()
                elapsed = (time.perf_counter() - start) * 1e3
                if rep >= 2:
                    samples[(f, n)].append(elapsed)
    print(f"median of {args.reps} reps, ms, {args.threads} threads")
    print(f"{'workload':<40} {'rustgrad':>9} {'torch':>9} {'ratio':>7}")
    for n in names:
        ours = statistics.median(samples[("rustgrad", n)])
        if "torch" in loads:
            theirs = statistics.median(samples[("torch", n)])
            print(f"{n:<40} {ours:>9.2f} {theirs:>9.2f} {ours / theirs:>6.2f}x")
        else:
            print(f"{n:<40} {ours:>9.2f}")


if __name__ == "__main__":
    main()
