"""Generate tests/vectors/data_samplers.json: PyTorch's indices for the random parts of
``torch.utils.data`` (RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
random_split, the DataLoader) for seeded generators.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_data.py

Read by tests/python/test_data.py (not by the generic vector readers: data loading is
Python-only). A case names its ``kind`` and arguments; randomness comes either from
``seed`` (a ``Generator().manual_seed(seed)`` passed as ``generator=``) or from
``global_seed`` (``manual_seed(global_seed)`` and no generator). ``epochs`` iterations
are recorded, then ``after``: ``randperm(8)`` drawn from the same generator (the global
one for ``global_seed``), which checks how many numbers the iterations consumed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)

OUT = Path(__file__).resolve().parent / "data_samplers.json"


def run(case: dict[str, Any]) -> dict[str, Any]:
    """The case with its ``expected`` epochs and ``after`` draw filled in."""
    if "seed" in case:
        generator = torch.Generator().manual_seed(case["seed"])
    else:
        torch.manual_seed(case["global_seed"])
        generator = None
    kind, args = case["kind"], case["args"]
    epochs: list[Any] = []
    if kind == "random_split":
        parts = random_split(range(args["n"]), args["lengths"], generator=generator)
        epochs.append([list(part.indices) for part in parts])
    else:
        if kind == "random_sampler":
            source = RandomSampler(
                range(args["n"]),
                replacement=args.get("replacement", False),
                num_samples=args.get("num_samples"),
                generator=generator,
            )
        elif kind == "subset_random_sampler":
            source = SubsetRandomSampler(args["indices"], generator=generator)
        elif kind == "weighted_random_sampler":
            source = WeightedRandomSampler(
                args["weights"],
                args["num_samples"],
                replacement=args.get("replacement", True),
                generator=generator,
            )
        elif kind == "batch_sampler":
            source = BatchSampler(
                RandomSampler(range(args["n"]), generator=generator),
                args["batch_size"],
                args["drop_last"],
            )
        elif kind == "dataloader":
            source = DataLoader(
                TensorDataset(torch.arange(args["n"])),
                batch_size=args["batch_size"],
                shuffle=args.get("shuffle", True),
                drop_last=args.get("drop_last", False),
                generator=generator,
            )
        else:
            raise ValueError(kind)
        for _ in range(case.get("epochs", 1)):
            if kind == "dataloader":
                epochs.append([batch[0].tolist() for batch in source])
            else:
                epochs.append(list(source))
    after = torch.randperm(8, generator=generator).tolist()
    return {**case, "expected": epochs, "after": after}


CASES: list[dict[str, Any]] = [
    {"name": "random_perm", "kind": "random_sampler", "seed": 0, "args": {"n": 10}, "epochs": 3},
    {
        "name": "random_perm_global",
        "kind": "random_sampler",
        "global_seed": 7,
        "args": {"n": 10},
        "epochs": 2,
    },
    {
        "name": "random_num_samples_over_n",
        "kind": "random_sampler",
        "seed": 3,
        "args": {"n": 7, "num_samples": 17},
        "epochs": 2,
    },
    {
        "name": "random_num_samples_under_n",
        "kind": "random_sampler",
        "seed": 4,
        "args": {"n": 9, "num_samples": 4},
    },
    {
        "name": "random_replacement",
        "kind": "random_sampler",
        "seed": 5,
        "args": {"n": 6, "replacement": True, "num_samples": 70},
        "epochs": 2,
    },
    {
        "name": "random_replacement_default_count",
        "kind": "random_sampler",
        "seed": 6,
        "args": {"n": 40, "replacement": True},
    },
    {
        "name": "random_replacement_global",
        "kind": "random_sampler",
        "global_seed": 8,
        "args": {"n": 5, "replacement": True, "num_samples": 33},
    },
    {
        "name": "subset_random",
        "kind": "subset_random_sampler",
        "seed": 9,
        "args": {"indices": [3, 14, 15, 92, 65, 35, 89]},
        "epochs": 2,
    },
    {
        "name": "subset_random_global",
        "kind": "subset_random_sampler",
        "global_seed": 10,
        "args": {"indices": [5, 6, 7, 8, 9]},
        "epochs": 2,
    },
    {
        "name": "weighted_replacement",
        "kind": "weighted_random_sampler",
        "seed": 11,
        "args": {"weights": [0.1, 0.9, 0.4, 0.7, 3.0, 0.6], "num_samples": 20},
        "epochs": 2,
    },
    {
        "name": "weighted_no_replacement",
        "kind": "weighted_random_sampler",
        "seed": 12,
        "args": {
            "weights": [0.9, 0.4, 0.05, 0.2, 0.3, 0.1],
            "num_samples": 5,
            "replacement": False,
        },
        "epochs": 2,
    },
    {
        "name": "weighted_zero_weights",
        "kind": "weighted_random_sampler",
        "seed": 13,
        "args": {"weights": [0.0, 2.0, 0.0, 1.0], "num_samples": 12},
    },
    {
        "name": "weighted_global",
        "kind": "weighted_random_sampler",
        "global_seed": 14,
        "args": {"weights": [1, 2, 3, 4], "num_samples": 9},
    },
    {
        "name": "split_lengths",
        "kind": "random_split",
        "seed": 42,
        "args": {"n": 10, "lengths": [3, 7]},
    },
    {
        "name": "split_fractions",
        "kind": "random_split",
        "seed": 42,
        "args": {"n": 30, "lengths": [0.3, 0.3, 0.4]},
    },
    {
        "name": "split_fraction_remainder",
        "kind": "random_split",
        "seed": 1,
        "args": {"n": 11, "lengths": [0.5, 0.25, 0.25]},
    },
    {
        "name": "split_global",
        "kind": "random_split",
        "global_seed": 15,
        "args": {"n": 12, "lengths": [2, 4, 6]},
    },
    {
        "name": "batch_sampler_random",
        "kind": "batch_sampler",
        "seed": 16,
        "args": {"n": 10, "batch_size": 3, "drop_last": False},
        "epochs": 2,
    },
    {
        "name": "batch_sampler_random_drop_last",
        "kind": "batch_sampler",
        "seed": 17,
        "args": {"n": 10, "batch_size": 3, "drop_last": True},
    },
    {
        "name": "random_num_samples_multiple_of_n",
        "kind": "random_sampler",
        "seed": 20,
        "args": {"n": 5, "num_samples": 10},
    },
    {
        "name": "random_replacement_multiple_of_32",
        "kind": "random_sampler",
        "seed": 21,
        "args": {"n": 4, "replacement": True, "num_samples": 64},
    },
    {
        "name": "loader_no_shuffle_draws_base_seed",
        "kind": "dataloader",
        "seed": 22,
        "args": {"n": 5, "batch_size": 2, "shuffle": False},
        "epochs": 2,
    },
    {
        "name": "loader_shuffle",
        "kind": "dataloader",
        "seed": 0,
        "args": {"n": 10, "batch_size": 4},
        "epochs": 3,
    },
    {
        "name": "loader_shuffle_drop_last",
        "kind": "dataloader",
        "seed": 18,
        "args": {"n": 11, "batch_size": 3, "drop_last": True},
        "epochs": 2,
    },
    {
        "name": "loader_shuffle_global",
        "kind": "dataloader",
        "global_seed": 19,
        "args": {"n": 9, "batch_size": 2},
        "epochs": 2,
    },
]


def main() -> None:
    """Writes data_samplers.json."""
    cases = [run(case) for case in CASES]
    # One case a line: small diffs when a case changes.
    lines = ",\n".join("  " + json.dumps(case) for case in cases)
    OUT.write_text(f'{{\n "torch_version": "{torch.__version__}",\n "cases": [\n{lines}\n ]\n}}\n')
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
