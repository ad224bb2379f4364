"""conv2d 3x3, 64 -> 64 channels, padding 1, on a 16x64x56x56 float32 batch:
forward, and forward + backward (input, weight and bias gradients), rustgrad side by
side with PyTorch, alternating the two every repetition; medians and ratios.

    .venv/bin/python benchmarks/bench_nn_conv.py [--reps N] [--threads T]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]

Without --torch-site the benchmark looks for .torch-venv next to the repository (or
/work/main/.torch-venv) and times rustgrad alone when torch is not importable. Both
frameworks run with the same thread count (default: 2).
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

SHAPE = (16, 64, 56, 56)
WEIGHT = (64, 64, 3, 3)


def arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    w = (rng.standard_normal(WEIGHT) / np.sqrt(64 * 9)).astype(np.float32)
    b = rng.standard_normal(WEIGHT[0]).astype(np.float32)
    return [x, w, b]


def functional(fw: ModuleType) -> Any:
    return fw.nn.functional


def forward(fw: ModuleType, data: list[np.ndarray]) -> Callable[[], Any]:
    x, w, b = (fw.from_numpy(a) for a in data)
    conv2d = functional(fw).conv2d

    def run() -> Any:
        with fw.no_grad():
            return conv2d(x, w, b, padding=1)

    return run


def forward_backward(fw: ModuleType, data: list[np.ndarray]) -> Callable[[], Any]:
    x, w, b = (fw.from_numpy(a.copy()).requires_grad_() for a in data)
    conv2d = functional(fw).conv2d

    def run() -> Any:
        x.grad = w.grad = b.grad = None
        y = conv2d(x, w, b, padding=1)
        y.sum().backward()
        return w.grad

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per setting")
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

    data = arrays()
    if "torch" in frameworks:
        ours = forward(rustgrad, data)().numpy()
        theirs = forward(frameworks["torch"], data)().numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)

    workloads = {"forward": forward, "forward+backward": forward_backward}
    print(
        f"conv2d {WEIGHT[2]}x{WEIGHT[3]} {WEIGHT[1]}->{WEIGHT[0]}, padding 1, input "
        f"{'x'.join(map(str, SHAPE))} float32, {args.threads} threads, median of "
        f"{args.reps} reps, ms"
    )
    print(f"{'workload':<18} " + " ".join(f"{n:>10}" for n in frameworks) + "   ratio")
    for label, make in workloads.items():
        runs = {name: make(fw, data) for name, fw in frameworks.items()}
        samples: dict[str, list[float]] = {name: [] for name in frameworks}
        order = list(frameworks)
        for rep in range(args.reps + 1):
            for name in order if rep % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                runs[name]()
                elapsed = (time.perf_counter() - start) * 1e3
                if rep > 0:  # the first repetition warms up
                    samples[name].append(elapsed)
        medians = {name: statistics.median(s) for name, s in samples.items()}
        ratio = medians["rustgrad"] / medians["torch"] if "torch" in medians else float("nan")
        print(
            f"{label:<18} "
            + " ".join(f"{medians[n]:>10.1f}" for n in frameworks)
            + f"   {ratio:.2f}x"
        )


if __name__ == "__main__":
    main()
