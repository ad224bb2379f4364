"""DistributedDataParallel on real MPI jobs (Note [Distributed]).

The worker (tests/python/distributed_jobs/ddp.py) checks on every rank that DDP
training equals single-process training on the concatenated batch (MLP float64 within
1e-12, LeNet float32 within 1e-5), no_sync accumulation, frozen parameters (only the
trainable bytes are all-reduced), find_unused_parameters and PyTorch's error without
it, bucket order, buffer broadcasts and the ``module.`` prefix; frozen_resnet.py checks
that the frozen ResNet-18 fine-tune all-reduces only fc's bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_distributed import assert_ok, launch

VECTORS = Path(__file__).parents[1] / "vectors" / "ddp_torchrun.json"


def final_hash(stdout: str) -> str:
    found = re.findall(r"HASH ([0-9a-f]{64})", stdout)
    assert len(found) == 1, stdout
    return found[0]


def test_ddp_on_two_ranks() -> None:
    assert_ok(launch(2, "ddp.py"), 2)


def test_ddp_on_three_ranks_is_bitwise_reproducible() -> None:
    first = launch(3, "ddp.py")
    assert_ok(first, 3)
    second = launch(3, "ddp.py")
    assert_ok(second, 3)
    assert final_hash(first.stdout) == final_hash(second.stdout)


def test_frozen_resnet18_fine_tune_all_reduces_only_fc() -> None:
    assert_ok(launch(2, "frozen_resnet.py"), 2)


def test_torchrun_style_script_matches_pytorchs_losses() -> None:
    """A torchrun + DDP + DistributedSampler script, unchanged but for its import line,
    gives PyTorch's per-epoch losses (tests/vectors/ddp_torchrun.json) and they go down."""
    want = json.loads(VECTORS.read_text())
    proc = launch(want["nproc"], "torchrun_style.py")
    assert_ok(proc, want["nproc"])
    got = [float(v) for v in re.findall(r"^epoch \d+ loss (\S+)", proc.stdout, re.M)]
    assert len(got) == len(want["losses"]), proc.stdout
    for g, w in zip(got, want["losses"]):
        assert abs(g - w) <= 1e-5 * abs(w), (got, want["losses"])
    assert got[-1] < got[0]


def test_ddp_train_example_trains_and_resumes_from_its_snapshot(tmp_path: Path) -> None:
    """examples/ddp_train.py (torchrun style, PyTorch's API only) under the launcher: the
    epoch losses go down, rank 0 writes the snapshot, and a second run resumes after it."""
    script = str(Path(__file__).parents[2] / "examples" / "ddp_train.py")
    snapshot = str(tmp_path / "snapshot.pt")
    first = launch(2, script, "6", "3", "--snapshot", snapshot)
    assert first.returncode == 0, first.stdout + first.stderr
    losses = [float(v) for v in re.findall(r"^epoch \d+ loss (\S+)", first.stdout, re.M)]
    assert len(losses) == 6, first.stdout
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.1 * losses[0], losses
    assert first.stdout.count("snapshot saved") == 2, first.stdout
    second = launch(2, script, "8", "3", "--snapshot", snapshot)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming from the snapshot after epoch 6" in second.stdout, second.stdout
    resumed = [int(v) for v in re.findall(r"^epoch (\d+) loss", second.stdout, re.M)]
    assert resumed == [6, 7], second.stdout
