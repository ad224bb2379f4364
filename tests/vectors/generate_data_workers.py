"""Generate tests/vectors/data_workers.json: what PyTorch's DataLoader yields with worker
processes (``num_workers > 0``) for seeded generators.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_data_workers.py

Read by tests/python/test_data_workers.py (not by the generic vector readers: data
loading is Python-only). A case names its ``kind`` of dataset, the dataset's ``args``
and the DataLoader's keyword arguments ``loader``; randomness comes from ``seed`` (a
``Generator().manual_seed(seed)`` passed as ``generator=``) or from ``global_seed``
(``manual_seed(global_seed)`` and no generator). ``epochs`` iterations of one loader
are recorded (as nested lists), then ``after``: ``randperm(8)`` drawn from the same
generator (the global one for ``global_seed``), which checks how many numbers the
iterations consumed.

Kinds (the test file defines the same datasets over rustgrad):

- ``map``: ``dataset[i] == i`` for ``i < n``.
- ``iterable_plain``: every worker yields ``range(n)`` (PyTorch duplicates the data).
- ``iterable_sharded``: worker ``w`` of ``k`` yields ``range(w, n, k)``
  (``get_worker_info()`` sharding; ``range(n)`` in the main process).
- ``iterable_uneven``: worker ``w`` yields ``(w + 1) * n`` numbers from ``100 * w``, so
  the workers run out at different times.
- ``probe``: ``dataset[i]`` is what worker-side randomness gives for sample ``i``:
  ``[i, worker id, num_workers, worker seed, initial_seed(), rand(2), random.random(),
  numpy.random.random()]``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

OUT = Path(__file__).resolve().parent / "data_workers.json"


class Range(Dataset):
    """``dataset[i] == i``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


class Probe(Range):
    """Sample ``i`` records the worker's identity and its random streams."""

    def __getitem__(self, i: int) -> list:
        info = get_worker_info()
        return [
            i,
            info.id,
            info.num_workers,
            info.seed,
            torch.initial_seed(),
            torch.rand(2).tolist(),
            random.random(),
            float(np.random.random()),
        ]


class Iterable(IterableDataset):
    """The ``iterable_*`` kinds."""

    def __init__(self, kind: str, n: int) -> None:
        self.kind = kind
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if self.kind == "iterable_plain":
            return iter(range(self.n))
        if self.kind == "iterable_sharded":
            return iter(range(worker, self.n, workers))
        return iter(range(100 * worker, 100 * worker + (worker + 1) * self.n))


def as_lists(batch: Any) -> Any:
    """A batch as nested Python lists and numbers."""
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, (list, tuple)):
        return [as_lists(item) for item in batch]
    return batch


def run(case: dict[str, Any]) -> dict[str, Any]:
    """The case with its ``expected`` epochs and ``after`` draw filled in."""
    if "seed" in case:
        generator = torch.Generator().manual_seed(case["seed"])
    else:
        torch.manual_seed(case["global_seed"])
        generator = None
    kind, n = case["kind"], case["args"]["n"]
    if kind == "map":
        dataset: Any = Range(n)
    elif kind == "probe":
        dataset = Probe(n)
    else:
        dataset = Iterable(kind, n)
    loader = DataLoader(dataset, generator=generator, **case["loader"])
    epochs = [as_lists(list(loader)) for _ in range(case.get("epochs", 1))]
    after = torch.randperm(8, generator=generator).tolist()
    return {**case, "expected": epochs, "after": after}


def map_case(name: str, seed: int, num_workers: int, **loader: Any) -> dict[str, Any]:
    """A shuffled map-style case."""
    return {
        "name": name,
        "kind": "map",
        "seed": seed,
        "args": {"n": 11},
        "loader": {"batch_size": 3, "shuffle": True, "num_workers": num_workers, **loader},
        "epochs": 2,
    }


CASES: list[dict[str, Any]] = [
    *(map_case(f"map_shuffle_{k}_workers", 7, k) for k in (0, 1, 2, 3)),
    map_case("map_shuffle_drop_last", 8, 2, drop_last=True),
    map_case("map_shuffle_prefetch_1", 9, 2, prefetch_factor=1),
    # The base seed is drawn once for persistent workers, so epoch 2 differs from
    # num_workers=0's.
    map_case("map_shuffle_persistent", 7, 2, persistent_workers=True),
    {
        "name": "map_global_seed",
        "kind": "map",
        "global_seed": 3,
        "args": {"n": 10},
        "loader": {"batch_size": 4, "shuffle": True, "num_workers": 2},
        "epochs": 2,
    },
    *(
        {
            "name": f"{kind}_{workers}_workers_batch_{batch}{'_drop_last' if drop else ''}",
            "kind": kind,
            "seed": 1,
            "args": {"n": n},
            "loader": {"batch_size": batch, "num_workers": workers, "drop_last": drop},
        }
        for kind, n, workers, batch, drop in [
            ("iterable_plain", 5, 2, 2, False),
            ("iterable_plain", 5, 2, None, False),
            ("iterable_sharded", 11, 2, 2, False),
            ("iterable_sharded", 11, 3, 2, False),
            ("iterable_sharded", 11, 3, 2, True),
            ("iterable_sharded", 7, 2, None, False),
            ("iterable_uneven", 3, 3, 2, False),
            ("iterable_uneven", 3, 2, None, False),
        ]
    ),
    {
        "name": "iterable_sharded_persistent",
        "kind": "iterable_sharded",
        "seed": 1,
        "args": {"n": 9},
        "loader": {"batch_size": 2, "num_workers": 2, "persistent_workers": True},
        "epochs": 2,
    },
    {
        "name": "probe_generator",
        "kind": "probe",
        "seed": 11,
        "args": {"n": 5},
        "loader": {"batch_size": None, "num_workers": 2},
    },
    {
        "name": "probe_global_seed",
        "kind": "probe",
        "global_seed": 12,
        "args": {"n": 4},
        "loader": {"batch_size": None, "num_workers": 2},
    },
    {
        "name": "probe_persistent",
        "kind": "probe",
        "seed": 13,
        "args": {"n": 4},
        "loader": {"batch_size": None, "num_workers": 2, "persistent_workers": True},
        "epochs": 2,
    },
]


def main() -> None:
    """Writes the JSON file."""
    cases = [run(case) for case in CASES]
    OUT.write_text(json.dumps({"torch_version": torch.__version__, "cases": cases}, indent=1))
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
