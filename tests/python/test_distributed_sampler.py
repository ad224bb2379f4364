"""DistributedSampler against PyTorch's indices (tests/vectors/distributed_sampler.json,
written by tests/vectors/generate_distributed_sampler.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rustgrad.utils.data import DistributedSampler
from rustgrad.utils.data.distributed import DistributedSampler as FromModule

VECTORS = Path(__file__).parents[1] / "vectors" / "distributed_sampler.json"
CASES = json.loads(VECTORS.read_text())["cases"]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: json.dumps(
        [c["length"], c["num_replicas"], c["shuffle"], c["seed"], c["drop_last"]]
    ),
)
def test_indices_equal_pytorch(case: dict) -> None:
    for epoch, ranks in case["epochs"].items():
        for rank, want in enumerate(ranks):
            s = DistributedSampler(
                range(case["length"]),
                num_replicas=case["num_replicas"],
                rank=rank,
                shuffle=case["shuffle"],
                seed=case["seed"],
                drop_last=case["drop_last"],
            )
            s.set_epoch(int(epoch))
            assert list(s) == want["indices"], (epoch, rank)
            assert len(s) == want["len"]


def test_errors_and_names() -> None:
    assert FromModule is DistributedSampler
    with pytest.raises(
        ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"
    ):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
