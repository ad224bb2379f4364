"""Per-op overhead: a chain of 100 tiny elementwise ops, forward + backward.

With 16-element tensors the arithmetic is negligible, so this measures what
each framework spends around an op: dispatch, creating the output and its graph
node, and running that node in backward. rustgrad and PyTorch run the same
chain alternately within one process (order swapped every repetition), so
machine noise hits both alike; the report is the median time per op.

    .venv/bin/python benchmarks/bench_chain.py [--reps N] [--json PATH]
        [--torch-site .torch-venv/lib/python3.11/site-packages]

`make bench` passes --torch-site automatically when .torch-venv exists.
Either framework may be missing; the benchmark runs whichever is importable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from types import ModuleType
from typing import Any, Callable

CHAIN_LENGTH = 100
NUMEL = 16
START_VALUES = [0.05 * (i - NUMEL / 2) for i in range(NUMEL)]


def chain(x: Any) -> Any:
    """CHAIN_LENGTH cheap elementwise ops that both frameworks spell the same way."""
    y = x
    for i in range(CHAIN_LENGTH):
        step = i % 4
        if step == 0:
            y = y + x
        elif step == 1:
            y = y * 0.5
        elif step == 2:
            y = y.tanh()
        else:
            y = y - 0.25
    return y


def run_once(fw: ModuleType) -> tuple[int, Any]:
    """One forward + backward; returns (nanoseconds, gradient of the leaf)."""
    x = fw.tensor(START_VALUES, requires_grad=True)
    start = time.perf_counter_ns()
    loss = chain(x).sum()
    loss.backward()
    elapsed = time.perf_counter_ns() - start
    return elapsed, x.grad


def import_frameworks(torch_site: str | None) -> dict[str, ModuleType]:
    frameworks: dict[str, ModuleType] = {}
    try:
        import rustgrad

        frameworks["rustgrad"] = rustgrad
    except ImportError as err:
        print(f"rustgrad not importable ({err}); run `make setup` first", file=sys.stderr)
    if torch_site is not None:
        wanted = f"python{sys.version_info.major}.{sys.version_info.minor}"
        if wanted not in torch_site:
            print(f"warning: --torch-site {torch_site} may not match {wanted}", file=sys.stderr)
        # Appended, not prepended: .venv's own packages (numpy) keep precedence.
        sys.path.append(torch_site)
    try:
        import torch

        frameworks["torch"] = torch
    except ImportError:
        print("torch not importable: timing rustgrad alone", file=sys.stderr)
    return frameworks


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def machine_info() -> dict[str, Any]:
    """The machine a JSON report was measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def check_same_gradients(frameworks: dict[str, ModuleType]) -> None:
    """Both frameworks must compute the same thing, or the timing means nothing."""
    grads = {name: run_once(fw)[1].tolist() for name, fw in frameworks.items()}
    if len(grads) == 2:
        ours, theirs = grads["rustgrad"], grads["torch"]
        worst = max(abs(a - b) for a, b in zip(ours, theirs))
        if worst > 1e-4:
            raise SystemExit(f"gradients disagree (max abs diff {worst:.3g}): {ours} vs {theirs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="timed repetitions per framework")
    parser.add_argument("--warmup", type=int, default=50, help="untimed repetitions first")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--torch-site",
        metavar="PATH",
        help="site-packages of a venv holding torch, appended to sys.path",
    )
    args = parser.parse_args()

    frameworks = import_frameworks(args.torch_site)
    if not frameworks:
        raise SystemExit("neither rustgrad nor torch is importable")
    check_same_gradients(frameworks)

    runners: list[tuple[str, Callable[[], tuple[int, Any]]]] = [
        (name, lambda fw=fw: run_once(fw)) for name, fw in frameworks.items()
    ]
    for _ in range(args.warmup):
        for _name, runner in runners:
            runner()
    samples_us: dict[str, list[float]] = {name: [] for name in frameworks}
    for rep in range(args.reps):
        order = runners if rep % 2 == 0 else runners[::-1]
        for name, runner in order:
            elapsed_ns, _grad = runner()
            samples_us[name].append(elapsed_ns / 1e3 / CHAIN_LENGTH)

    results: dict[str, Any] = {}
    for name, samples in samples_us.items():
        results[name] = {
            "version": getattr(frameworks[name], "__version__", "unknown"),
            "median_us_per_op": statistics.median(samples),
            "p10_us_per_op": percentile(samples, 0.10),
            "p90_us_per_op": percentile(samples, 0.90),
        }
    ratio = None
    if len(results) == 2:
        ratio = results["rustgrad"]["median_us_per_op"] / results["torch"]["median_us_per_op"]

    print(
        f"chain of {CHAIN_LENGTH} elementwise ops on {NUMEL} float32 elements, "
        f"forward + backward, {args.reps} reps"
    )
    print(f"{'framework':<10} {'version':<16} {'median':>9} {'p10':>9} {'p90':>9}  (us per op)")
    for name, row in results.items():
        print(
            f"{name:<10} {row['version']:<16} {row['median_us_per_op']:>9.2f} "
            f"{row['p10_us_per_op']:>9.2f} {row['p90_us_per_op']:>9.2f}"
        )
    if ratio is not None:
        print(f"rustgrad / torch (median): {ratio:.2f}x")

    if args.json:
        report = {
            "benchmark": "chain",
            "chain_length": CHAIN_LENGTH,
            "numel": NUMEL,
            "dtype": "float32",
            "reps": args.reps,
            "results": results,
            "ratio_rustgrad_over_torch": ratio,
            "machine": machine_info(),
        }
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
