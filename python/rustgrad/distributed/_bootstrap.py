"""One rank of a job started by ``python -m rustgrad.distributed.run``.

Sets torchrun's per-rank environment variables from the MPI launcher's (MPICH's
``PMI_RANK``/``MPI_LOCALRANKID``, Open MPI's ``OMPI_COMM_WORLD_RANK``/
``OMPI_COMM_WORLD_LOCAL_RANK``), then runs the script (or ``-m`` module) as
``__main__``. An exception that escapes it is printed with the rank's number, written to
the launcher's error directory, and ends the job: ``MPI_Abort`` when MPI is running
(mpiexec then kills every rank), else a non-zero exit without ``MPI_Finalize`` (which
would wait for the other ranks).
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import time
import traceback


def _first(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _set_env() -> int:
    rank = int(_first("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK") or 0)
    local = _first("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")
    nproc = int(os.environ.get("RUSTGRAD_RUN_NPROC_PER_NODE", "1"))
    local_rank = int(local) if local is not None else rank % nproc
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(local_rank),
            "GROUP_RANK": str(rank // nproc),
            "ROLE_RANK": str(rank),
            "ROLE_NAME": "default",
        }
    )
    return rank


def _fail(rank: int, code: int, text: str) -> None:
    sys.stderr.write(text)
    errors = os.environ.get("RUSTGRAD_RUN_ERROR_DIR")
    if errors:
        try:
            with open(os.path.join(errors, f"rank{rank}.txt"), "w") as f:
                f.write(text)
        except OSError:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - best effort before ending the job
            pass
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        time.sleep(0.5)  # let mpiexec's proxy forward the traceback first
        mpi.COMM_WORLD.Abort(code)
    os._exit(code)


def main() -> None:
    """Runs the rank's script; see the module docstring."""
    argv = sys.argv[1:]
    no_python = bool(argv) and argv[0] == "--no-python"
    if no_python:
        argv = argv[1:]
    as_module = bool(argv) and argv[0] == "-m"
    if as_module:
        argv = argv[1:]
    if not argv:
        raise SystemExit("usage: python -m rustgrad.distributed._bootstrap [-m] script args")
    rank = _set_env()
    if no_python:
        sys.exit(subprocess.call(argv))
    sys.argv = list(argv)
    try:
        if as_module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            return
        status = code if isinstance(code, int) else 1
        text = f"[rank {rank}] exited with status {code}\n"
        _fail(rank, status, text)
    except BaseException:  # noqa: BLE001 - any failure ends the whole job
        text = f"[rank {rank}] " + traceback.format_exc()
        _fail(rank, 1, text)


if __name__ == "__main__":
    main()
