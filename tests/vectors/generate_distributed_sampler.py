"""Generate tests/vectors/distributed_sampler.json: PyTorch's DistributedSampler indices.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_distributed_sampler.py

Read by tests/python/test_distributed_sampler.py. Each case is a dataset length,
``num_replicas``, ``shuffle``, ``seed`` and ``drop_last``; it records, for each epoch in
``epochs`` (set with ``set_epoch``) and each rank, the sampler's indices and its length.
No process group is needed: ``num_replicas`` and ``rank`` are passed.
"""

from __future__ import annotations

import json
from pathlib import Path

from torch.utils.data.distributed import DistributedSampler

CASES = [
    # (length, num_replicas, shuffle, seed, drop_last, epochs)
    (10, 3, True, 0, False, [0, 1, 5]),
    (10, 3, True, 0, True, [0, 1]),
    (10, 3, False, 0, False, [0]),
    (10, 3, False, 0, True, [0]),
    (12, 4, True, 42, False, [0, 3]),
    (7, 2, True, 123, True, [2]),
    (2, 5, True, 7, False, [0, 1]),  # padding longer than the dataset
    (2, 5, False, 0, False, [0]),
    (1, 1, True, 0, False, [0]),
    (100, 8, True, 2024, False, [0, 9]),
    (101, 8, True, 2024, True, [4]),
]


def main() -> None:
    cases = []
    for length, replicas, shuffle, seed, drop_last, epochs in CASES:
        per_epoch = {}
        for epoch in epochs:
            ranks = []
            for rank in range(replicas):
                s = DistributedSampler(
                    range(length),
                    replicas,
                    rank,
                    shuffle=shuffle,
                    seed=seed,
                    drop_last=drop_last,
                )
                s.set_epoch(epoch)
                ranks.append({"indices": list(s), "len": len(s)})
            per_epoch[str(epoch)] = ranks
        cases.append(
            {
                "length": length,
                "num_replicas": replicas,
                "shuffle": shuffle,
                "seed": seed,
                "drop_last": drop_last,
                "epochs": per_epoch,
            }
        )
    out = Path(__file__).with_name("distributed_sampler.json")
    out.write_text(json.dumps({"cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
