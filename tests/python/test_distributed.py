"""rustgrad.distributed on real MPI jobs (Note [Distributed]).

Each test starts one job of 2 or 3 processes on this machine (oversubscribed, one
thread each) through ``python -m rustgrad.distributed.run`` or plain ``mpiexec``; the
job's worker scripts live in tests/python/distributed_jobs/ and check their results on
every rank (against numpy, or against a single-process run), aborting the job on the
first failure. Every job runs under a subprocess timeout, so a hang fails, never blocks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import rustgrad as torch
import rustgrad.distributed as dist

JOBS = Path(__file__).parent / "distributed_jobs"
BIN = Path(sys.executable).parent
TIMEOUT = 120


def job_env(**extra: str | None) -> dict[str, str]:
    """The environment of a job: one compute thread per process (a variable given as
    None is removed)."""
    env = dict(os.environ)
    env.update(RUSTGRAD_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def launch(
    nproc: int, script: str, *args: str, plain: bool = False, **env: str | None
) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` on ``nproc`` processes, through the launcher or plain mpiexec."""
    path = str(JOBS / script)
    if plain:
        cmd = [str(BIN / "mpiexec"), "-n", str(nproc), sys.executable, path, *args]
    else:
        cmd = [
            sys.executable,
            "-m",
            "rustgrad.distributed.run",
            "--nproc-per-node",
            str(nproc),
            path,
            *args,
        ]
    return subprocess.run(cmd, env=job_env(**env), capture_output=True, text=True, timeout=TIMEOUT)


def assert_ok(proc: subprocess.CompletedProcess[str], nproc: int) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in range(nproc):
        assert f"OK {rank}" in proc.stdout, proc.stdout + proc.stderr


def processes_with(token: str, grace: float = 5.0) -> list[str]:
    """Command lines of live processes that mention ``token``, after waiting up to
    ``grace`` seconds for killed ranks to finish exiting."""
    deadline = time.monotonic() + grace
    while True:
        found = _processes_with(token)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _processes_with(token: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if token in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def test_collectives_on_three_ranks_against_numpy() -> None:
    """Every collective, dtype and layout on 3 ranks, through the launcher."""
    assert_ok(launch(3, "collectives.py"), 3)


def test_collectives_on_two_ranks_under_plain_mpiexec() -> None:
    """The same checks on 2 ranks started by plain ``mpiexec`` (no RANK variables),
    with ``backend="mpi"``."""
    assert_ok(launch(2, "collectives.py", plain=True, BACKEND="mpi"), 2)


def test_a_failing_rank_ends_the_job_with_its_traceback_and_no_orphans() -> None:
    token = uuid.uuid4().hex
    proc = launch(3, "fail.py", token, RUSTGRAD_NUM_THREADS=None)
    assert proc.returncode != 0
    # torchrun's environment reached every rank, with the script's arguments; without
    # RUSTGRAD_NUM_THREADS the launcher splits the CPUs between the ranks
    threads = max(1, (os.cpu_count() or 1) // 3)
    for rank in range(3):
        line = f"env {rank} {rank} 3 ['{token}'] threads={threads}"
        assert line in proc.stdout, proc.stdout
    assert "Root Cause (first observed failure): rank 1" in proc.stderr, proc.stderr
    assert "ZeroDivisionError: rank one failed on purpose" in proc.stderr
    assert processes_with(token) == []


def test_a_killed_rank_ends_the_job_and_leaves_no_orphans() -> None:
    token = uuid.uuid4().hex
    start = time.monotonic()
    proc = launch(3, "fail.py", token, "kill")
    assert proc.returncode != 0
    assert time.monotonic() - start < 30
    assert "rustgrad.distributed.run: the job failed" in proc.stderr, proc.stderr
    assert processes_with(token) == []


def test_a_failing_rank_under_plain_mpiexec_aborts_the_job() -> None:
    token = uuid.uuid4().hex
    proc = launch(2, "fail.py", token, plain=True)
    assert proc.returncode != 0
    assert "ZeroDivisionError: rank one failed on purpose" in proc.stderr, proc.stderr
    assert processes_with(token) == []


def test_single_process_group_and_errors_in_this_process() -> None:
    """Before init: PyTorch's errors; a process without a launcher is a group of one."""
    assert dist.is_available()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(torch.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    assert dist.ReduceOp.SUM is dist.ReduceOp.RedOpType.SUM
    assert dist.Backend("GLOO") == "gloo"
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in"):
        dist.init_process_group("nccl")


def test_mismatched_shapes_raise_on_every_rank_in_debug_mode() -> None:
    proc = launch(3, "mismatch.py", RUSTGRAD_DISTRIBUTED_DEBUG="DETAIL")
    assert_ok(proc, 3)


def test_a_rank_that_never_joins_times_out_the_others() -> None:
    token = uuid.uuid4().hex
    start = time.monotonic()
    proc = launch(3, "straggler.py", token)
    assert proc.returncode != 0
    assert time.monotonic() - start < 30
    assert "all_reduce timed out after 0:00:01" in proc.stderr, proc.stderr
    assert re.search(r"Root Cause \(first observed failure\): rank [02]", proc.stderr)
    assert processes_with(token) == []


def test_tensors_go_to_mpi_as_their_own_memory() -> None:
    """The zero-copy claim of Note [Distributed]: a contiguous tensor's MPI buffer is
    its storage; a transposed one goes through a temporary written back through a view
    of its storage."""
    import numpy as np
    from rustgrad.distributed import distributed_c10d as c10d

    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    arr, back = c10d._buffer(t)
    assert back is None and np.shares_memory(arr, t.numpy())
    arr[0, 0] = 42
    assert t[0, 0].item() == 42
    arr, back = c10d._buffer(t.t())
    assert arr.flags.c_contiguous and not np.shares_memory(arr, t.numpy())
    assert np.shares_memory(back, t.numpy())
    with pytest.raises(TypeError, match="does not support torch.bfloat16"):
        c10d._buffer(torch.ones(2, dtype=torch.bfloat16))
