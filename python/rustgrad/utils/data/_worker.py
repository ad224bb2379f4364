"""What runs inside a DataLoader worker process (PyTorch's
``torch.utils.data._utils.worker``): ``get_worker_info``, the worker's seeding and its
loop, and the small objects that travel between the main process and the workers
(Note [Data loading])."""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import rustgrad as torch

from ._fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between two checks that the other side is alive: a worker checks its parent,
the main process (without ``timeout``) wakes at least this often (PyTorch's value)."""


@dataclass(frozen=True)
class WorkerInfo:
    """Information about the current DataLoader worker process.

    Attributes:
        id: the worker's id, ``0`` to ``num_workers - 1``.
        num_workers: the loader's number of workers.
        seed: the seed of this worker's generators: the iterator's base seed + ``id``.
        dataset: this process's copy of the dataset.
        rng: always ``None`` (PyTorch fills it for thread workers only).
        worker_method: always ``"multiprocessing"``.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current DataLoader worker process.

    Returns:
        ``None`` in the main process; in a worker, a :class:`WorkerInfo` with ``id``,
        ``num_workers``, ``seed`` and ``dataset`` (the worker's copy), which an
        ``IterableDataset.__iter__`` or a ``worker_init_fn`` uses to give each worker
        its own share of the data.

    Example:
        >>> class Shard(IterableDataset):
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(start, 8, step))
        >>> sorted(int(x) for x in DataLoader(Shard(), batch_size=None, num_workers=2))
        [0, 1, 2, 3, 4, 5, 6, 7]
    """
    return _worker_info


class _KeyErrorMessage(str):
    """A message whose repr is itself, so that a re-raised KeyError shows the worker's
    traceback readably instead of as one quoted line."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, sent to the main process as its type and its
    formatted traceback (a traceback object does not pickle), and re-raised there.

    Args:
        exc_info: ``sys.exc_info()`` of the exception (the current one by default).
        where: where it happened, e.g. ``"in DataLoader worker process 1"``.
    """

    def __init__(self, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        """Raises the exception's type with "Caught <Exc> <where>.\\nOriginal
        Traceback ..." as its message, or a RuntimeError when the type cannot be built
        from one message (PyTorch's rule)."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # The traceback holds this frame: without the del, the exception would hold
            # itself, and the DataLoader iterator in the frames below would live in a
            # cycle until the next garbage collection.
            del exception


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The four 32-bit words that seed numpy's global generator in worker
    ``worker_id``: PyTorch's port of ``numpy.random.SeedSequence``'s mixing of
    ``[worker_id, base_seed low word, base_seed high word, 0]`` (numpy's algorithm,
    MIT licensed, Copyright (c) 2015 Melissa E. O'Neill, (c) 2019 NumPy Developers).
    A different algorithm from ``random``'s and the engine's keeps the three streams
    apart even though all derive from one seed."""
    init_a, mult_a = 0x43B0D7E5, 0x931E8875
    init_b, mult_b = 0x8B51F9DD, 0x58F38DED
    mix_mult_l, mix_mult_r = 0xCA01F9DD, 0x4973F715
    xshift, mask32 = 16, 0xFFFFFFFF

    hash_const_a = init_a

    def hash_word(value: int) -> int:
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> xshift)) & mask32

    def mix(x: int, y: int) -> int:
        result = ((mix_mult_l * x) - (mix_mult_r * y)) & mask32
        return (result ^ (result >> xshift)) & mask32

    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    pool = [hash_word(word) for word in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_word(pool[i_src]))

    hash_const_b = init_b
    state = []
    for word in pool:
        word = (word ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        word = (word * hash_const_b) & mask32
        state.append((word ^ (word >> xshift)) & mask32)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seeds this process as PyTorch seeds a worker: ``random`` and the engine's default
    generator with ``base_seed + worker_id``, numpy (when installed) with
    ``_generate_state``. Returns the seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np
    except ModuleNotFoundError:
        return seed
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(
    iterable: bool,
    dataset_holder: list,
    index_queue: Any,
    data_queue: Any,
    done_event: Any,
    auto_collation: bool,
    collate_fn: Callable[[Any], Any],
    drop_last: bool,
    base_seed: int,
    init_fn: Callable[[int], None] | None,
    worker_id: int,
    num_workers: int,
    parent_pid: int | None,
) -> None:
    """The body of worker process ``worker_id``.

    It receives ``(task_idx, index)`` from ``index_queue`` and puts ``(task_idx,
    batch)`` on ``data_queue``, where ``batch`` may be an ``ExceptionWrapper`` or an
    ``_IterableDatasetStopIteration``. ``None`` tells it to exit; ``_ResumeIteration``
    (persistent workers) restarts the fetcher and is echoed back. It also exits when its
    parent process is gone (``os.getppid()`` is no longer ``parent_pid``), checked every
    ``MP_STATUS_CHECK_INTERVAL`` seconds. ``parent_pid`` is the main process's pid, given
    by the main process: read here, it would already be init's (or a subreaper's) when
    the main process died before this worker started running (PyTorch's race). With
    'forkserver' the parent is the fork server, unknown to the main process, so it is
    None and read here.
    """
    global _worker_info
    # The holder list is emptied so that this frame keeps the only reference.
    dataset = dataset_holder.pop()
    try:
        # One engine thread per worker, as PyTorch: the workers already use the cores. A
        # forked child rebuilds the engine's pool on first use (Note [Thread count]).
        torch.set_num_threads(1)
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        # An error in worker_init_fn or in iter(dataset) is reported for the first task.
        init_exception: ExceptionWrapper | None = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        # After its dataset ran out (iterable-style) or once shutdown started, the
        # worker skips tasks and only waits for None.
        iteration_end = False
        if parent_pid is None:
            parent_pid = os.getppid()
        while os.getppid() == parent_pid:
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put((task, None))
                iteration_end = False
                fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if task is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            task_idx, index = task
            data: Any
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)  # type: ignore[union-attr]
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((task_idx, data))
            del data, task, index
    except KeyboardInterrupt:
        # The main process gets the same interrupt and raises it.
        pass
    finally:
        _worker_info = None
    if done_event.is_set():
        # The main process no longer reads: do not block exiting on unsent results.
        data_queue.cancel_join_thread()
        data_queue.close()
