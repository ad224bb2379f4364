"""Process groups and collectives of ``rustgrad.distributed`` on MPI (Note [Distributed]).

PyTorch's names, signatures and errors (``torch.distributed.distributed_c10d``); the
transport is MPI through mpi4py. Every tensor goes to MPI as the numpy array that shares
its storage (``Tensor.numpy()`` of the detached tensor: no copy); a non-contiguous
tensor goes through one contiguous temporary that is written back into the tensor's own
memory when the operation completes. mpi4py releases the GIL inside every MPI call.
"""

from __future__ import annotations

import datetime
import enum
import importlib.util
import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._rustgrad import Tensor

__all__ = [
    "Backend",
    "GroupMember",
    "P2POp",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "batch_isend_irecv",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_node_local_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_gloo_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "monitored_barrier",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
]

_NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)

default_pg_timeout = datetime.timedelta(minutes=30)


# --- MPI ----------------------------------------------------------------------------

_MPI: Any = None


def _mpi() -> Any:
    """mpi4py's ``MPI`` module, imported (and MPI initialised) on first use."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as err:  # pragma: no cover - setup installs it
            raise RuntimeError(
                "rustgrad.distributed runs on MPI through mpi4py, which is not "
                "installed: `pip install mpich mpi4py` (scripts/setup.sh installs both)"
            ) from err
        _MPI = MPI
    return _MPI


def is_available() -> bool:
    """True when the distributed package can be used (mpi4py is installed)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """True when the MPI backend is available (mpi4py is installed)."""
    return is_available()


def is_gloo_available() -> bool:
    """True when ``backend="gloo"`` works: it runs on MPI here."""
    return is_available()


def is_nccl_available() -> bool:
    """Always False: rustgrad runs on the CPU."""
    return False


def is_torchelastic_launched() -> bool:
    """True when started by a torchrun-style launcher (``TORCHELASTIC_RUN_ID`` is set,
    as ``python -m rustgrad.distributed.run`` does)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node: ``LOCAL_RANK``, else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device "
        "context and want the code to run locally instead."
    )


# --- enums ----------------------------------------------------------------------------


class Backend(str):
    """A backend name, lower-cased (``Backend("GLOO") == "gloo"``), as PyTorch's."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        return str.__new__(cls, name.lower())


class ReduceOp:
    """Reduction operations (``ReduceOp.SUM`` is ``ReduceOp.RedOpType.SUM``, as in PyTorch)."""

    class RedOpType(enum.Enum):
        """The kinds of reduction."""

        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


def _mpi_op(op: Any, dtype: np.dtype) -> Any:
    """The MPI operation for ``op`` on elements of ``dtype`` (AVG reduces as SUM)."""
    MPI = _mpi()
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"op must be a ReduceOp (e.g. ReduceOp.SUM), got {op!r}")
    if dtype == np.bool_:
        table = {
            ReduceOp.SUM: MPI.LOR,
            ReduceOp.MAX: MPI.LOR,
            ReduceOp.BOR: MPI.LOR,
            ReduceOp.PRODUCT: MPI.LAND,
            ReduceOp.MIN: MPI.LAND,
            ReduceOp.BAND: MPI.LAND,
            ReduceOp.BXOR: MPI.LXOR,
        }
    else:
        table = {
            ReduceOp.SUM: MPI.SUM,
            ReduceOp.AVG: MPI.SUM,
            ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX,
        }
        if dtype.kind in "iu":
            table.update({ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR})
    if op not in table:
        raise ValueError(f"ReduceOp {op.name} is not supported for {dtype} tensors")
    return table[op]


def _finish_avg(arr: np.ndarray, op: Any, size: int) -> None:
    """Divides a summed buffer by the group size for ``ReduceOp.AVG``."""
    if op is ReduceOp.AVG:
        if arr.dtype.kind == "f":
            np.divide(arr, size, out=arr)
        else:
            np.floor_divide(arr, size, out=arr)


# --- groups ---------------------------------------------------------------------------


class ProcessGroup:
    """A group of processes and its MPI communicator.

    ``comm_bytes`` counts the bytes this process handed to each kind of collective
    (``"all_reduce"``, ``"broadcast"``, ...), so tests and benchmarks can see what was
    communicated.
    """

    def __init__(self, comm: Any, ranks: list[int], backend: str, timeout: Any) -> None:
        self._comm = comm
        self._ranks = ranks
        self._backend = backend
        self._timeout = timeout
        self.comm_bytes: dict[str, int] = {}

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._comm.Get_rank()

    def size(self) -> int:
        """The number of processes in the group."""
        return self._comm.Get_size()

    def name(self) -> str:
        """The backend's name."""
        return self._backend

    def _count(self, kind: str, nbytes: int) -> None:
        self.comm_bytes[kind] = self.comm_bytes.get(kind, 0) + int(nbytes)

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend!r}, ranks={self._ranks})"


class GroupMember:
    """``GroupMember.WORLD`` (the default group once initialised) and the marker for
    ranks outside a group, as in PyTorch."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class _State:
    default: ProcessGroup | None = None
    groups: list[ProcessGroup] = []
    prev_excepthook: Any = None


def is_initialized() -> bool:
    """True once ``init_process_group`` has run (and until ``destroy_process_group``)."""
    return _State.default is not None


def _default() -> ProcessGroup:
    if _State.default is None:
        raise ValueError(_NOT_INIT)
    return _State.default


def _group(group: Any) -> ProcessGroup | None:
    """The group to use, or None when this rank is not in ``group``."""
    pg = _default()
    if group is None or group is GroupMember.WORLD:
        return pg
    if group == GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


# Seconds between printing a failing rank's traceback and MPI_Abort: hydra's proxy
# forwards a rank's stderr asynchronously and loses what it has not read yet when the
# job is aborted.
_ABORT_GRACE_S = 0.5


def _abort_on_exception(exc_type: Any, exc: Any, tb: Any) -> None:
    """sys.excepthook while a group exists: print the traceback, then abort the whole
    MPI job so that the other ranks do not wait forever in a collective."""
    hook = _State.prev_excepthook or sys.__excepthook__
    hook(exc_type, exc, tb)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - best effort before aborting
            pass
    if _State.default is not None and _MPI is not None and _MPI.Is_initialized():
        # Let mpiexec's proxy forward the traceback before MPI_Abort tears it down.
        time.sleep(_ABORT_GRACE_S)
        _MPI.COMM_WORLD.Abort(1)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"Error initializing torch.distributed using env:// rendezvous: "
            f"environment variable {name} must be an integer, got {value!r}"
        ) from None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Initialises the default process group on MPI.

    ``backend`` is ``"mpi"`` or ``"gloo"`` (both run on MPI; None means ``"gloo"``).
    The processes and their ranks are those of the MPI launcher (``mpirun``/``mpiexec``
    or ``python -m rustgrad.distributed.run``, which also sets torchrun's ``RANK``,
    ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``). ``rank`` and
    ``world_size`` (arguments or ``RANK``/``WORLD_SIZE``), when given, must agree with
    the launcher; a process started without a launcher is a group of one.
    ``init_method`` (``"env://"``, ``"tcp://..."``) and ``store`` are accepted: MPI
    does its own rendezvous. An uncaught exception in any rank aborts the whole job
    (the launcher prints that rank's traceback and exits non-zero).
    """
    if _State.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend) if backend is not None else Backend.GLOO
    name = str(name).split(",")[0].split(":")[-1]
    if name == Backend.NCCL:
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name not in (Backend.MPI, Backend.GLOO):
        raise ValueError(f"Invalid backend: '{backend}'")
    if timeout is None:
        timeout = default_pg_timeout
    elif not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout}"
        )
    MPI = _mpi()
    world = MPI.COMM_WORLD
    want_rank = rank if rank >= 0 else _env_int("RANK")
    want_size = world_size if world_size >= 0 else _env_int("WORLD_SIZE")
    if want_size is not None and want_size != world.Get_size():
        raise ValueError(
            f"world_size={want_size} but the MPI launcher started {world.Get_size()} "
            "process(es): launch with `python -m rustgrad.distributed.run "
            f"--nproc-per-node {want_size} script.py` or `mpirun -n {want_size} python script.py`"
        )
    if want_rank is not None and want_rank != world.Get_rank():
        raise ValueError(
            f"rank={want_rank} but the MPI launcher gave this process rank "
            f"{world.Get_rank()}: rustgrad.distributed takes ranks from MPI"
        )
    comm = world.Dup()
    pg = ProcessGroup(comm, list(range(comm.Get_size())), str(name), timeout)
    _State.default = pg
    _State.groups = [pg]
    GroupMember.WORLD = pg
    if sys.excepthook is not _abort_on_exception:
        _State.prev_excepthook = sys.excepthook
        sys.excepthook = _abort_on_exception


def destroy_process_group(group: Any = None) -> None:
    """Frees ``group``, or every group (and the default one) when ``group`` is None."""
    if group is None or group is GroupMember.WORLD:
        if _State.default is None:
            raise AssertionError("Process group cannot be None")
        for pg in _State.groups:
            _free(pg)
        _State.default = None
        _State.groups = []
        GroupMember.WORLD = None
        if sys.excepthook is _abort_on_exception:
            sys.excepthook = _State.prev_excepthook or sys.__excepthook__
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    _free(group)
    if group in _State.groups:
        _State.groups.remove(group)


def _free(pg: ProcessGroup) -> None:
    if pg._comm is not None and pg._comm != _mpi().COMM_NULL:
        pg._comm.Free()
    pg._comm = None


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
) -> Any:
    """A group of the given global ``ranks`` (all ranks when None). Every rank of the
    default group must call it; a rank outside ``ranks`` gets
    ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default()
    size = pg.size()
    members = sorted(set(range(size) if ranks is None else (int(r) for r in ranks)))
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r}: the world size is {size}")
    me = pg.rank()
    MPI = _mpi()
    color = 0 if me in members else MPI.UNDEFINED
    comm = pg._comm.Split(color, me)
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    new = ProcessGroup(
        comm, members, str(Backend(backend)) if backend else pg._backend, timeout or pg._timeout
    )
    _State.groups.append(new)
    return new


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside it."""
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of processes in ``group``; -1 when this rank is not in it."""
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group: Any = None) -> str:
    """The backend's name (``"mpi"`` or ``"gloo"``)."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks of ``group``'s members."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._ranks)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group``'s member ``group_rank``."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank in ``group`` of global rank ``global_rank``."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def _root(pg: ProcessGroup, glob: int | None, local: int | None, what: str) -> int:
    """The group rank of a root given as a global rank (``src``/``dst``) or a group
    rank (``group_src``/``group_dst``)."""
    if glob is not None and local is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if local is not None:
        root = int(local)
    elif glob is None:
        root = 0
    elif pg is _State.default:
        root = int(glob)  # global ranks are the default group's ranks
    else:
        if int(glob) not in pg._ranks:
            raise ValueError(f"Global rank {glob} is not part of group {pg}")
        root = pg._ranks.index(int(glob))
    if not 0 <= root < pg.size():
        raise RuntimeError(f"ProcessGroupMPI: invalid root rank: {root}")
    return root


# --- tensors as buffers ---------------------------------------------------------------

# dtypes whose Tensor.numpy() shares the tensor's memory (every numpy dtype rustgrad has;
# bfloat16 has no numpy dtype).
_ZERO_COPY = {
    f"torch.{n}"
    for n in ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")
}


def _buffer(t: Any, what: str = "tensor") -> tuple[np.ndarray, Any]:
    """The numpy array sharing ``t``'s memory (contiguous), and where to write a
    contiguous temporary back when there is one: the strided numpy view of a
    non-contiguous ``t``."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(t).__name__}")
    if str(t.dtype) not in _ZERO_COPY:
        raise TypeError(f"rustgrad.distributed does not support {t.dtype} tensors")
    view = t.detach().numpy()
    if view.flags.c_contiguous:
        return view, None
    return np.ascontiguousarray(view), view


def _store(dst: np.ndarray, src: np.ndarray) -> None:
    """Writes ``src`` into ``dst``, a numpy view of a tensor's memory."""
    dst[...] = src.reshape(dst.shape)


def _debug_detail() -> bool:
    mode = os.environ.get("RUSTGRAD_DISTRIBUTED_DEBUG") or os.environ.get(
        "TORCH_DISTRIBUTED_DEBUG", ""
    )
    return mode.upper() == "DETAIL"


def _check_consistent(pg: ProcessGroup, what: str, desc: Any) -> None:
    """RUSTGRAD_DISTRIBUTED_DEBUG=DETAIL: every rank exchanges the collective's name and
    its tensors' shapes and dtypes first, and all raise when they differ."""
    if not _debug_detail():
        return
    seen = pg._comm.allgather((what, desc))
    if any(s != seen[0] for s in seen):
        lines = "; ".join(f"rank {r}: {s[0]} {s[1]}" for r, s in enumerate(seen))
        raise RuntimeError(f"Detected mismatch between collectives on ranks ({what}): {lines}")


def _desc(*tensors: Any) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(t.shape), str(t.dtype)) for t in tensors if isinstance(t, Tensor)]


# --- work handles --------------------------------------------------------------------


class Work:
    """The handle of a collective started with ``async_op=True``.

    ``wait()`` blocks (GIL released) until the operation is done and its results are in
    the output tensors; ``is_completed()`` tests without blocking.
    """

    def __init__(
        self,
        requests: list[Any],
        finish: Callable[[], Any] | None = None,
        keep: Any = None,
        outputs: list[Any] | None = None,
        timeout: Any = None,
        what: str = "operation",
    ) -> None:
        self._requests = requests
        self._finish = finish
        self._keep = keep  # buffers MPI is using: alive until completion
        self._outputs = outputs or []
        self._done = False
        self._source = -1
        self._timeout = timeout
        self._what = what
        self._statuses = [_mpi().Status() for _ in requests]

    def _complete(self) -> None:
        if self._done:
            return
        self._done = True
        if self._finish is not None:
            value = self._finish()
            if isinstance(value, int):
                self._source = value
        self._keep = None

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Blocks until the operation completed; returns True. Raises RuntimeError when
        it has not completed within ``timeout`` (the process group's ``timeout`` when
        None): a rank that never joins the operation ends the wait, not the job."""
        if self._done:
            return True
        if timeout is None:
            timeout = self._timeout
        MPI = _mpi()
        requests, statuses = self._requests, self._statuses
        if not MPI.Request.Testall(requests, statuses):
            # Poll (each test drives MPI's progress, with the GIL released) instead of
            # MPI_Waitall, which cannot time out: a short busy phase for operations that
            # are about to finish, then sleeps growing to 200 us, so a waiting rank
            # leaves the CPU to the ranks it waits for.
            limit = None if timeout is None else time.monotonic() + timeout.total_seconds()
            polls, pause = 0, 0.0
            while not MPI.Request.Testall(requests, statuses):
                polls += 1
                if polls > 64:
                    if limit is not None and time.monotonic() > limit:
                        raise RuntimeError(
                            f"{self._what} timed out after {timeout} (the process group's "
                            "timeout): some rank did not take part in the operation"
                        )
                    pause = min(max(2 * pause, 1e-5), 2e-4)
                    time.sleep(pause)
        self._complete()
        return True

    def is_completed(self) -> bool:
        """True once the operation has completed (tests it without blocking)."""
        if not self._done and _mpi().Request.Testall(self._requests, self._statuses):
            self._complete()
        return self._done

    def is_success(self) -> bool:
        """True once the operation has completed successfully."""
        return self.is_completed()

    def exception(self) -> None:
        """None: a failed MPI operation raises from ``wait``."""
        return None

    def result(self) -> list[Any]:
        """The output tensors of the operation."""
        self.wait()
        return list(self._outputs)

    def source_rank(self) -> int:
        """The sender's rank of a completed ``irecv``."""
        self.wait()
        return self._source

    def synchronize(self) -> None:
        """Same as ``wait()`` on the CPU."""
        self.wait()


def _run(
    pg: ProcessGroup,
    async_op: bool,
    requests: list[Any],
    finish: Callable[[], Any] | None,
    keep: Any,
    outputs: list[Any],
) -> Work | None:
    what = sys._getframe(1).f_code.co_name
    work = Work(requests, finish, keep, outputs, pg._timeout, what)
    if async_op:
        return work
    work.wait()
    return None


def _writer(pairs: list[tuple[np.ndarray, Any]]) -> Callable[[], None]:
    def write() -> None:
        for src, dst in pairs:
            if dst is not None:
                _store(dst, src)

    return write


# --- collectives ---------------------------------------------------------------------


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Blocks until every rank of ``group`` has reached it."""
    pg = _group(group)
    if pg is None:
        return None
    return _run(pg, async_op, [pg._comm.Ibarrier()], None, None, [])


def monitored_barrier(
    group: Any = None,
    timeout: datetime.timedelta | float | None = None,
    wait_all_ranks: bool = False,
) -> None:
    """A barrier that raises RuntimeError when some rank has not reached it within
    ``timeout`` (the group's timeout when None; a number is seconds)."""
    pg = _group(group)
    if pg is None:
        return
    if isinstance(timeout, (int, float)):
        timeout = datetime.timedelta(seconds=timeout)
    work = Work([pg._comm.Ibarrier()], None, None, [], pg._timeout, "monitored_barrier")
    work.wait(timeout)


def all_reduce(
    tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Reduces ``tensor`` over all ranks; every rank gets the result in ``tensor``."""
    pg = _group(group)
    if pg is None:
        return None
    arr, view = _buffer(tensor)
    mop = _mpi_op(op, arr.dtype)
    _check_consistent(pg, "all_reduce", _desc(tensor))
    pg._count("all_reduce", arr.nbytes)
    req = pg._comm.Iallreduce(_mpi().IN_PLACE, arr, mop)
    size = pg.size()

    def finish() -> None:
        _finish_avg(arr, op, size)
        _writer([(arr, view)])()

    return _run(pg, async_op, [req], finish, arr, [tensor])


def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    arr, view = _buffer(tensor)
    _check_consistent(pg, "broadcast", _desc(tensor))
    pg._count("broadcast", arr.nbytes)
    req = pg._comm.Ibcast(arr, root=root)
    return _run(pg, async_op, [req], _writer([(arr, view)]), arr, [tensor])


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: Any = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Reduces ``tensor`` over all ranks into ``tensor`` on rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    arr, view = _buffer(tensor)
    mop = _mpi_op(op, arr.dtype)
    _check_consistent(pg, "reduce", _desc(tensor))
    pg._count("reduce", arr.nbytes)
    MPI = _mpi()
    is_root = pg.rank() == root
    if is_root:
        req = pg._comm.Ireduce(MPI.IN_PLACE, arr, mop, root=root)
    else:
        req = pg._comm.Ireduce(arr, None, mop, root=root)
    size = pg.size()

    def finish() -> None:
        if is_root:
            _finish_avg(arr, op, size)
            _writer([(arr, view)])()

    return _run(pg, async_op, [req], finish, arr, [tensor])


def _check_list(tensors: Any, size: int, like: Tensor, what: str, name: str) -> list[Tensor]:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name} must be a list of Tensors")
    if len(tensors) != size:
        raise RuntimeError(
            f"ProcessGroupMPI::{what}: invalid {name} (expected length {size}, got {len(tensors)})"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}[{i}] must be a Tensor, got {type(t).__name__}")
        if t.dtype != like.dtype:
            raise RuntimeError(
                f"ProcessGroupMPI::{what}: invalid tensor type at index {i} (expected "
                f"{like.dtype}, got {t.dtype})"
            )
        if tuple(t.shape) != tuple(like.shape):
            raise RuntimeError(
                f"ProcessGroupMPI::{what}: invalid tensor size at index {i} (expected "
                f"{tuple(like.shape)}, got {tuple(t.shape)})"
            )
    return list(tensors)


def _scatter_into(flat: np.ndarray, tensors: list[Tensor]) -> Callable[[], None]:
    def write() -> None:
        for i, t in enumerate(tensors):
            arr, back = _buffer(t)
            if back is None:
                arr[...] = flat[i].reshape(arr.shape)
            else:
                _store(back, flat[i])

    return write


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Gathers every rank's ``tensor`` into ``tensor_list`` on every rank."""
    pg = _group(group)
    if pg is None:
        return None
    size = pg.size()
    outs = _check_list(tensor_list, size, tensor, "allgather", "output tensor list")
    arr, _ = _buffer(tensor)
    _check_consistent(pg, "all_gather", _desc(tensor))
    flat = np.empty((size, arr.size), dtype=arr.dtype)
    pg._count("all_gather", arr.nbytes)
    req = pg._comm.Iallgather(arr.reshape(-1), flat)
    return _run(pg, async_op, [req], _scatter_into(flat, outs), (arr, flat), outs)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Gathers every rank's ``input_tensor`` into ``output_tensor`` (concatenated
    along the first dimension, or stacked)."""
    pg = _group(group)
    if pg is None:
        return None
    size = pg.size()
    _same_dtype(output_tensor, input_tensor, "all_gather_into_tensor")
    if output_tensor.numel() != size * input_tensor.numel():
        raise ValueError(
            "output tensor size must be equal to world_size times input tensor size "
            f"(got {tuple(output_tensor.shape)} for input {tuple(input_tensor.shape)} "
            f"and world size {size})"
        )
    arr, _ = _buffer(input_tensor)
    out, view = _buffer(output_tensor)
    _check_consistent(pg, "all_gather_into_tensor", _desc(output_tensor, input_tensor))
    pg._count("all_gather", arr.nbytes)
    req = pg._comm.Iallgather(arr.reshape(-1), out.reshape(-1))
    return _run(pg, async_op, [req], _writer([(out, view)]), (arr, out), [output_tensor])


def _same_dtype(a: Tensor, b: Tensor, what: str) -> None:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{what} expects Tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"{what}: the output and input tensors must have the same dtype "
            f"(got {a.dtype} and {b.dtype})"
        )


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Gathers every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    size = pg.size()
    arr, _ = _buffer(tensor)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        outs = _check_list(gather_list, size, tensor, "gather", "output tensor list")
        flat = np.empty((size, arr.size), dtype=arr.dtype)
    else:
        if gather_list:
            raise ValueError(
                "Argument ``gather_list`` must NOT be specified on non-destination ranks."
            )
        outs, flat = [], None
    _check_consistent(pg, "gather", _desc(tensor))
    pg._count("gather", arr.nbytes)
    req = pg._comm.Igather(arr.reshape(-1), flat, root=root)
    finish = _scatter_into(flat, outs) if flat is not None else None
    return _run(pg, async_op, [req], finish, (arr, flat), outs)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Sends ``scatter_list[i]`` of rank ``src`` into ``tensor`` of rank i."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    size = pg.size()
    out, view = _buffer(tensor)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        ins = _check_list(scatter_list, size, tensor, "scatter", "input tensor list")
        send = np.stack([_buffer(t)[0].reshape(-1) for t in ins])
        pg._count("scatter", send.nbytes)
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        send = None
    _check_consistent(pg, "scatter", _desc(tensor))
    req = pg._comm.Iscatter(send, out.reshape(-1), root=root)
    return _run(pg, async_op, [req], _writer([(out, view)]), (send, out), [tensor])


def reduce_scatter(
    output: Tensor,
    input_list: list[Tensor],
    op: Any = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduces ``input_list[i]`` over all ranks into ``output`` of rank i."""
    pg = _group(group)
    if pg is None:
        return None
    ins = _check_list(input_list, pg.size(), output, "reduce_scatter", "input tensor list")
    out, view = _buffer(output)
    send = np.stack([_buffer(t)[0].reshape(-1) for t in ins])
    return _reduce_scatter(pg, send, out, view, op, async_op, output)


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: Any = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduces ``input`` (world size × ``output``'s elements) over all ranks; rank i
    gets the i-th block in ``output``."""
    pg = _group(group)
    if pg is None:
        return None
    _same_dtype(output, input, "reduce_scatter_tensor")
    if input.numel() != pg.size() * output.numel():
        raise ValueError(
            "input tensor must be the same size as output size times world size "
            f"(got {tuple(input.shape)} for output {tuple(output.shape)} and world "
            f"size {pg.size()})"
        )
    out, view = _buffer(output)
    send, _ = _buffer(input)
    return _reduce_scatter(pg, send, out, view, op, async_op, output)


def _reduce_scatter(
    pg: ProcessGroup,
    send: np.ndarray,
    out: np.ndarray,
    view: np.ndarray | None,
    op: Any,
    async_op: bool,
    output: Tensor,
) -> Work | None:
    mop = _mpi_op(op, out.dtype)
    _check_consistent(pg, "reduce_scatter", [(tuple(send.shape), str(send.dtype))])
    pg._count("reduce_scatter", send.nbytes)
    req = pg._comm.Ireduce_scatter_block(send.reshape(-1), out.reshape(-1), mop)
    size = pg.size()

    def finish() -> None:
        _finish_avg(out, op, size)
        _writer([(out, view)])()

    return _run(pg, async_op, [req], finish, (send, out), [output])


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Splits ``input`` along dim 0 into world-size parts, sends part i to rank i, and
    concatenates the received parts into ``output`` (equal splits only)."""
    pg = _group(group)
    if pg is None:
        return None
    if output_split_sizes or input_split_sizes:
        raise NotImplementedError("all_to_all_single supports equal splits only")
    _same_dtype(output, input, "all_to_all_single")
    if output.numel() != input.numel() or input.numel() % pg.size():
        raise ValueError(
            "all_to_all_single: input and output must have the same size, "
            "divisible by the world size"
        )
    out, view = _buffer(output)
    send, _ = _buffer(input)
    pg._count("all_to_all", send.nbytes)
    req = pg._comm.Ialltoall(send.reshape(-1), out.reshape(-1))
    return _run(pg, async_op, [req], _writer([(out, view)]), (send, out), [output])


def all_to_all(
    output_tensor_list: list[Tensor],
    input_tensor_list: list[Tensor],
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Sends ``input_tensor_list[i]`` to rank i, which receives it in its
    ``output_tensor_list[rank]`` (tensors of one shape and dtype)."""
    pg = _group(group)
    if pg is None:
        return None
    size = pg.size()
    if not isinstance(input_tensor_list, (list, tuple)) or not input_tensor_list:
        raise TypeError("input_tensor_list must be a non-empty list of Tensors")
    like = input_tensor_list[0]
    ins = _check_list(input_tensor_list, size, like, "alltoall", "input tensor list")
    outs = _check_list(output_tensor_list, size, like, "alltoall", "output tensor list")
    send = np.stack([_buffer(t)[0].reshape(-1) for t in ins])
    flat = np.empty_like(send)
    _check_consistent(pg, "all_to_all", _desc(like))
    pg._count("all_to_all", send.nbytes)
    req = pg._comm.Ialltoall(send, flat)
    return _run(pg, async_op, [req], _scatter_into(flat, outs), (send, flat), outs)


# --- point to point ------------------------------------------------------------------


def _peer(pg: ProcessGroup, glob: int | None, local: int | None, what: str) -> int:
    if glob is None and local is None:
        raise ValueError(f"Must specify either {what} or group_{what}")
    return _root(pg, glob, local, what)


def isend(
    tensor: Tensor,
    dst: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:
    """Starts sending ``tensor`` to rank ``dst``; returns a work handle."""
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    arr, _ = _buffer(tensor)
    pg._count("send", arr.nbytes)
    req = pg._comm.Isend(arr, dest=peer, tag=tag)
    return Work([req], None, arr, [tensor], pg._timeout, "send")


def send(
    tensor: Tensor,
    dst: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> None:
    """Sends ``tensor`` to rank ``dst`` (blocks until the buffer may be reused)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def irecv(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Work | None:
    """Starts receiving into ``tensor`` from rank ``src`` (any rank when None)."""
    pg = _group(group)
    if pg is None:
        return None
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _root(pg, src, group_src, "src")
    arr, view = _buffer(tensor)
    req = pg._comm.Irecv(arr, source=peer, tag=tag)
    write = _writer([(arr, view)])
    work = Work([req], None, arr, [tensor], pg._timeout, "recv")

    def finish() -> int:
        write()
        source = work._statuses[0].Get_source()
        return pg._ranks[source] if 0 <= source < len(pg._ranks) else -1

    work._finish = finish
    return work


def recv(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_src: int | None = None,
) -> int:
    """Receives into ``tensor`` from rank ``src`` (any rank when None); returns the
    sender's rank."""
    pg = _group(group)
    if pg is None:
        return -1
    work = irecv(tensor, src, group, tag, group_src)
    assert work is not None
    work.wait()
    return work._source


class P2POp:
    """One point-to-point operation for ``batch_isend_irecv``: ``op`` is ``isend`` or
    ``irecv``, ``peer`` a global rank (or ``group_peer`` a group rank)."""

    def __init__(
        self,
        op: Callable[..., Any],
        tensor: Tensor,
        peer: int | None = None,
        group: Any = None,
        tag: int = 0,
        group_peer: int | None = None,
    ) -> None:
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                "``torch.distributed.irecv``."
            )
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Starts every operation of ``p2p_op_list``; returns their work handles."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError(
            "Invalid ``p2p_op_list``. Each op is expected to to be of type "
            "``torch.distributed.P2POp``."
        )
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            work = isend(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        else:
            work = irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        if work is not None:
            works.append(work)
    return works


# --- Python objects ------------------------------------------------------------------


def _wait_arrays(pg: ProcessGroup, what: str, request: Any, keep: Any) -> None:
    """Waits for an MPI request on numpy buffers, with the group's timeout."""
    Work([request], None, keep, [], pg._timeout, what).wait()


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Gathers every rank's picklable ``obj`` into ``object_list`` on every rank
    (pickled bytes through two non-blocking all-gathers: sizes, then the bytes)."""
    pg = _group(group)
    if pg is None:
        return
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = np.empty(pg.size(), dtype=np.int64)
    mine = np.array([data.size], dtype=np.int64)
    _wait_arrays(pg, "all_gather_object", pg._comm.Iallgather(mine, sizes), (mine, sizes))
    width = int(sizes.max())
    padded = np.zeros(width, dtype=np.uint8)
    padded[: data.size] = data
    everyone = np.empty((pg.size(), width), dtype=np.uint8)
    pg._count("all_gather_object", width)
    _wait_arrays(pg, "all_gather_object", pg._comm.Iallgather(padded, everyone), everyone)
    for i in range(pg.size()):
        object_list[i] = pickle.loads(everyone[i, : sizes[i]].tobytes())


def gather_object(
    obj: Any,
    object_gather_list: list[Any] | None = None,
    dst: int | None = None,
    group: Any = None,
    group_dst: int | None = None,
) -> None:
    """Gathers every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "dst")
    objs = pg._comm.gather(obj, root=root)
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError(
                "Argument ``object_gather_list`` must be specified on destination rank."
            )
        for i, o in enumerate(objs):
            object_gather_list[i] = o


def broadcast_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: Any = None,
    device: Any = None,
    group_src: int | None = None,
) -> None:
    """Replaces ``object_list``'s items on every rank by those of rank ``src``."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "src")
    is_root = pg.rank() == root
    data = np.frombuffer(pickle.dumps(list(object_list)), dtype=np.uint8) if is_root else None
    size = np.array([0 if data is None else data.size], dtype=np.int64)
    _wait_arrays(pg, "broadcast_object_list", pg._comm.Ibcast(size, root=root), size)
    buf = data.copy() if data is not None else np.empty(int(size[0]), dtype=np.uint8)
    pg._count("broadcast_object_list", buf.nbytes)
    _wait_arrays(pg, "broadcast_object_list", pg._comm.Ibcast(buf, root=root), buf)
    if not is_root:
        for i, o in enumerate(pickle.loads(buf.tobytes())):
            object_list[i] = o


def scatter_object_list(
    scatter_object_output_list: list[Any],
    scatter_object_input_list: list[Any] | None = None,
    src: int | None = None,
    group: Any = None,
    group_src: int | None = None,
) -> None:
    """Sends ``scatter_object_input_list[i]`` of rank ``src`` into
    ``scatter_object_output_list[0]`` of rank i."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "src")
    objs = list(scatter_object_input_list) if pg.rank() == root else None
    scatter_object_output_list[0] = pg._comm.scatter(objs, root=root)
