"""cross_entropy forward + backward on 128x1000 float32 logits, rustgrad beside PyTorch.

Each repetition builds a fresh leaf, runs ``F.cross_entropy(x, target)`` and
``loss.backward()``; the frameworks alternate every repetition so that machine noise
hits both alike, and the medians are compared. rustgrad runs its fused log-softmax +
NLL kernel (Note [Class-index losses]); the script first checks that both frameworks
agree on the loss and the gradient.

    .venv/bin/python benchmarks/bench_nn_loss.py [--reps N] [--threads T]
        [--label-smoothing LS]
        [--torch-site /work/main/.torch-venv/lib/python3.11/site-packages]

Without --torch-site the benchmark looks for .torch-venv next to the repository (or
/work/main/.torch-venv) and times rustgrad alone when torch is not importable.
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

BATCH, CLASSES = 128, 1000


def step(fw: ModuleType, logits: np.ndarray, target: np.ndarray, ls: float) -> tuple[int, Any]:
    """One forward + backward; returns (ns, (loss, grad))."""
    x = fw.tensor(logits, requires_grad=True)
    t = fw.tensor(target)
    functional: Any = fw.nn.functional
    start = time.perf_counter_ns()
    loss = functional.cross_entropy(x, t, label_smoothing=ls)
    loss.backward()
    elapsed = time.perf_counter_ns() - start
    return elapsed, (loss.item(), x.grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="timed repetitions")
    parser.add_argument("--threads", type=int, default=1, help="threads for both frameworks")
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--torch-site", metavar="PATH", help="site-packages holding torch")
    args = parser.parse_args()

    import rustgrad
    import rustgrad.nn.functional  # noqa: F401

    frameworks: dict[str, ModuleType] = {"rustgrad": rustgrad}
    site = find_torch_site(args.torch_site)
    if site is not None:
        sys.path.append(site)
        try:
            import torch
            import torch.nn.functional  # noqa: F401

            frameworks["torch"] = torch
        except ImportError:
            print("torch not importable: timing rustgrad alone", file=sys.stderr)
    for fw in frameworks.values():
        fw.set_num_threads(args.threads)

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((BATCH, CLASSES)).astype(np.float32)
    target = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    ls = args.label_smoothing

    results = {name: step(fw, logits, target, ls)[1] for name, fw in frameworks.items()}
    if "torch" in results:
        (a, ga), (b, gb) = results["rustgrad"], results["torch"]
        assert abs(a - b) <= 1e-5 * abs(b), (a, b)
        np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-4, atol=1e-7)

    samples: dict[str, list[float]] = {name: [] for name in frameworks}
    names = list(frameworks)
    for rep in range(args.reps + 10):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            elapsed = step(frameworks[name], logits, target, ls)[0] / 1e6
            if rep >= 10:
                samples[name].append(elapsed)

    print(
        f"cross_entropy forward+backward, {BATCH}x{CLASSES} float32, label_smoothing={ls}, "
        f"{args.threads} thread(s), median of {args.reps} reps, ms"
    )
    medians = {name: statistics.median(s) for name, s in samples.items()}
    for name, fw in frameworks.items():
        version = getattr(fw, "__version__", "unknown")
        ratio = ""
        if "torch" in medians:
            ratio = f"  ({medians[name] / medians['torch']:.2f}x torch)"
        print(f"{name:<10} {version:<14} {medians[name]:>8.3f}{ratio}")


if __name__ == "__main__":
    main()
