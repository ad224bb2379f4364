"""Capture and replay: the 100-op chain of bench_chain.py, eager against replayed.

The step is bench_chain.py's: a chain of 100 tiny elementwise ops on 16 float32
elements, `.sum().backward()`. `rustgrad.jit.trace` captures it once; the replay runs
it from Rust (one fused node for the chain, Note [Capture and replay]). Eager and replay
run alternately within one process (order swapped every repetition), timed with
`time.process_time_ns` (CPU time, so other processes' load counts less); the report is
the median per step and the ratio replay / eager (issue 24 asks for <= 0.3).

    .venv/bin/python benchmarks/bench_replay.py [--reps N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import rustgrad
from bench_chain import CHAIN_LENGTH, NUMEL, START_VALUES, chain, machine_info, percentile


def step(x: Any) -> Any:
    """Forward and backward of the chain."""
    loss = chain(x).sum()
    loss.backward()
    return loss


def leaf() -> Any:
    return rustgrad.tensor(START_VALUES, requires_grad=True)


def timed(run: Callable[[Any], Any]) -> tuple[int, Any]:
    """One step on a fresh leaf: (CPU nanoseconds, gradient of the leaf)."""
    x = leaf()
    start = time.process_time_ns()
    run(x)
    elapsed = time.process_time_ns() - start
    return elapsed, x.grad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="timed repetitions of each")
    parser.add_argument("--warmup", type=int, default=100, help="untimed repetitions first")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()

    traced = rustgrad.jit.trace(step, (leaf(),))
    eager_grad, replay_grad = timed(step)[1], timed(traced)[1]
    if not bool((eager_grad == replay_grad).all()):
        raise SystemExit("replay and eager gradients differ: the timing means nothing")

    runners = [("eager", step), ("replay", traced)]
    for _ in range(args.warmup):
        for _name, run in runners:
            timed(run)
    samples_us: dict[str, list[float]] = {name: [] for name, _ in runners}
    for rep in range(args.reps):
        order = runners if rep % 2 == 0 else runners[::-1]
        for name, run in order:
            samples_us[name].append(timed(run)[0] / 1e3)

    results = {
        name: {
            "median_us_per_step": statistics.median(samples),
            "p10_us_per_step": percentile(samples, 0.10),
            "p90_us_per_step": percentile(samples, 0.90),
        }
        for name, samples in samples_us.items()
    }
    ratio = results["replay"]["median_us_per_step"] / results["eager"]["median_us_per_step"]
    print(
        f"chain of {CHAIN_LENGTH} elementwise ops on {NUMEL} float32 elements, forward + "
        f"backward, {args.reps} reps, CPU time, {rustgrad.get_num_threads()} threads"
    )
    print(f"{'mode':<8} {'median':>9} {'p10':>9} {'p90':>9}  (us per step)")
    for name, row in results.items():
        print(
            f"{name:<8} {row['median_us_per_step']:>9.1f} {row['p10_us_per_step']:>9.1f} "
            f"{row['p90_us_per_step']:>9.1f}"
        )
    print(f"replay / eager (median): {ratio:.3f}x")
    print(f"captured ops: {traced.op_names}")

    if args.json:
        report = {
            "benchmark": "replay",
            "chain_length": CHAIN_LENGTH,
            "numel": NUMEL,
            "dtype": "float32",
            "reps": args.reps,
            "threads": rustgrad.get_num_threads(),
            "results": results,
            "ratio_replay_over_eager": ratio,
            "machine": machine_info(),
        }
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
