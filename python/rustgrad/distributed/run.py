"""``python -m rustgrad.distributed.run``: torchrun's command line on top of ``mpiexec``.

    python -m rustgrad.distributed.run --nproc-per-node 2 train.py --epochs 3

starts ``mpiexec -n 2`` (MPICH's hydra from the ``mpich`` wheel in the same environment,
else the first ``mpiexec`` on PATH) running each rank through :mod:`._bootstrap`, which
sets the environment torchrun sets (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``ROLE_RANK``, ``ROLE_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``) and runs the script as
``__main__``. A rank that raises (or exits non-zero) ends the whole job: mpiexec kills
the other ranks, and the launcher prints that rank's traceback and exits non-zero.

Several machines: ``--hostfile FILE`` (one host name per line, ``host:slots`` allowed)
is passed to mpiexec as ``-f FILE``; ``--nproc-per-node`` ranks run on each of
``--nnodes`` hosts (Note [Distributed]).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path


def _mpiexec() -> str:
    """The mpiexec next to this interpreter (the mpich wheel's), else the one on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise SystemExit(
            "rustgrad.distributed.run: no mpiexec found: `pip install mpich mpi4py` "
            "(scripts/setup.sh installs both)"
        )
    return found


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m rustgrad.distributed.run",
        description="Start N processes of a training script on MPI, with torchrun's "
        "environment variables.",
    )
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1")
    p.add_argument("--nnodes", default="1")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    p.add_argument("--hostfile", default=None, help="mpiexec host file (several machines)")
    p.add_argument("-m", "--module", action="store_true", help="run a module, as python -m")
    p.add_argument("--no-python", "--no_python", action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _count(value: str, what: str) -> int:
    if value == "cpu":
        return os.cpu_count() or 1
    if value == "auto":
        return 1
    try:
        n = int(value.split(":")[-1])
    except ValueError:
        raise SystemExit(f"rustgrad.distributed.run: invalid {what}: {value!r}") from None
    if n < 1:
        raise SystemExit(f"rustgrad.distributed.run: {what} must be at least 1, got {n}")
    return n


def main(argv: list[str] | None = None) -> int:
    """Runs the launcher; returns the job's exit status."""
    args = _parser().parse_args(argv)
    if args.max_restarts:
        raise SystemExit("rustgrad.distributed.run: --max-restarts is not supported")
    nproc = _count(args.nproc_per_node, "--nproc-per-node")
    nnodes = _count(args.nnodes, "--nnodes")
    world = nproc * nnodes
    errors = tempfile.mkdtemp(prefix="rustgrad-run-")
    env = dict(os.environ)
    env.update(
        {
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(nproc),
            "ROLE_WORLD_SIZE": str(world),
            "MASTER_ADDR": args.master_addr,
            "MASTER_PORT": str(args.master_port),
            "TORCHELASTIC_RUN_ID": args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex,
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
            "RUSTGRAD_RUN_ERROR_DIR": errors,
            "RUSTGRAD_RUN_NPROC_PER_NODE": str(nproc),
        }
    )
    if nproc > 1:
        # torchrun sets OMP_NUM_THREADS=1 for several processes per node; rustgrad's
        # kernels use RUSTGRAD_NUM_THREADS: split the node's CPUs between the ranks.
        threads = str(max(1, (os.cpu_count() or 1) // nproc))
        for name in ("RUSTGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
            if name not in env:
                env[name] = threads
                print(
                    f"rustgrad.distributed.run: setting {name}={threads} for each of the "
                    f"{nproc} processes per node (set it to override)",
                    file=sys.stderr,
                )
    cmd = [_mpiexec(), "-n", str(world)]
    if args.hostfile:
        cmd += ["-f", args.hostfile, "-ppn", str(nproc)]
    if args.no_python:
        cmd += [sys.executable, "-m", "rustgrad.distributed._bootstrap", "--no-python"]
    else:
        cmd += [sys.executable, "-m", "rustgrad.distributed._bootstrap"]
    if args.module:
        cmd.append("-m")
    cmd += [args.training_script, *args.training_script_args]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward)
    try:
        rc = proc.wait()
    finally:
        # mpiexec kills its ranks when one fails; this catches anything left in its
        # session (a rank's own children), so the job leaves no process behind.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    failures = sorted(Path(errors).glob("rank*.txt"), key=lambda f: f.stat().st_mtime)
    if rc != 0 or failures:
        rc = rc or 1
        print(f"rustgrad.distributed.run: the job failed (exit status {rc})", file=sys.stderr)
        if failures:
            first = failures[0]
            print(
                f"Root Cause (first observed failure): {first.stem.replace('rank', 'rank ')}"
                f"\n{first.read_text()}",
                file=sys.stderr,
            )
    shutil.rmtree(errors, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
