"""``DataLoader``: batches from a dataset, loaded in the main process or in worker
processes (PyTorch's ``torch.utils.data.dataloader``; Note [Data loading])."""

from __future__ import annotations

import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import time
import warnings
import weakref
from collections.abc import Iterable, Iterator
from multiprocessing.context import BaseContext
from typing import Any, Callable, Generic, TypeVar

import rustgrad as torch

from . import _worker
from ._collate import default_collate, default_convert
from ._fetch import create_fetcher
from ._worker import ExceptionWrapper, get_worker_info
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)

# Attributes that decide what an iteration yields; PyTorch freezes them after __init__.
_FROZEN_ATTRIBUTES = (
    "batch_size",
    "batch_sampler",
    "sampler",
    "drop_last",
    "dataset",
    "persistent_workers",
)


class _InfiniteConstantSampler(Sampler):
    """Yields ``None`` forever: the "sampler" of an iterable-style dataset."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Iterates over a dataset in (optionally shuffled) batches.

    Args:
        dataset (Dataset): a map-style or iterable-style dataset.
        batch_size (int, optional): samples per batch (default 1); ``None`` turns
            batching off (each sample goes through ``default_convert``).
        shuffle (bool, optional): reshuffle at every epoch (map-style datasets only).
        sampler (Sampler or Iterable, optional): the order of the indices; excludes
            ``shuffle``.
        batch_sampler (Sampler or Iterable, optional): yields lists of indices;
            excludes ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers (int): how many worker processes load batches; 0 (the default)
            loads them in the main process.
        collate_fn (Callable, optional): merges a list of samples into a batch
            (default :func:`default_collate`).
        pin_memory (bool): accepted and ignored (there is no accelerator).
        drop_last (bool): drop the last incomplete batch.
        timeout (float): with workers, the seconds to wait for a batch before raising
            RuntimeError ("DataLoader timed out after N seconds"); 0 waits forever.
        worker_init_fn (Callable, optional): called with the worker id in each worker,
            after seeding and before loading.
        multiprocessing_context (str or context, optional): the start method of the
            workers ('fork', 'spawn', 'forkserver') or a ``multiprocessing`` context;
            the platform's default when None.
        generator (Generator, optional): the source of the shuffle order and of each
            iteration's base seed.
        prefetch_factor (int, optional): batches requested in advance per worker
            (default 2 with workers; must be None without).
        persistent_workers (bool): keep the workers alive between epochs.
        pin_memory_device (str): accepted and ignored.
        in_order (bool): with workers, yield batches in sampler order (True) or as
            they arrive (False).

    With ``num_workers > 0`` the main process still draws the indices, so a map-style
    dataset gives the same batches in the same order as with 0 workers; each worker
    process fetches and collates whole batches, seeded with ``base_seed + worker_id``
    (see :func:`get_worker_info`). An iterable-style dataset is iterated by every
    worker: without ``get_worker_info()`` sharding its data is duplicated. The dataset,
    ``collate_fn`` and ``worker_init_fn`` must be picklable with the 'spawn' and
    'forkserver' start methods; batches come back pickled.

    Example:
        >>> ds = TensorDataset(rustgrad.arange(5))
        >>> [batch[0].tolist() for batch in DataLoader(ds, batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """

    dataset: Dataset[_T_co]
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    drop_last: bool
    timeout: float
    sampler: Sampler | Iterable
    prefetch_factor: int | None
    __initialized = False

    def __init__(
        self,
        dataset: Dataset[_T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: torch.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and timeout > 0:
            raise ValueError("timeout option needs num_workers > 0")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set "
                "prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in (False, None):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler "
                    f"option, but got batch_sampler={batch_sampler}"
                )
        else:
            self._iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive "
                "with drop_last"
            )

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            # BatchSampler checks batch_size (a positive int) and drop_last (a bool).
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called: int | None = None
        self._iterator: _MultiProcessingDataLoaderIter | None = None
        self.__initialized = True
        self.check_worker_number_rationality()

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in _FROZEN_ATTRIBUTES:
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Sampler | Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def multiprocessing_context(self) -> BaseContext | None:
        """The ``multiprocessing`` context that starts the workers (None: the default)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context: Any) -> None:
        if multiprocessing_context is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(multiprocessing_context, str):
                valid_start_methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid_start_methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start "
                        f"method in {valid_start_methods!r}, but got "
                        f"multiprocessing_context={multiprocessing_context!r}"
                    )
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    "string specifying the start method, but got "
                    f"multiprocessing_context={multiprocessing_context}"
                )
        self.__multiprocessing_context = multiprocessing_context

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        # Persistent workers live in the one iterator the loader keeps; each later
        # epoch resets it instead of starting new processes.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def check_worker_number_rationality(self) -> None:
        """Warns, as PyTorch does, when ``num_workers`` exceeds the CPUs this process
        may use."""
        if self.num_workers == 0:
            return
        if hasattr(os, "sched_getaffinity"):
            max_num_worker_suggest: int | None = len(os.sched_getaffinity(0))
            cpuset_checked = True
        else:
            max_num_worker_suggest = os.cpu_count()
            cpuset_checked = False
        if max_num_worker_suggest is not None and self.num_workers <= max_num_worker_suggest:
            return
        if max_num_worker_suggest is None:
            suggestion = (
                "DataLoader is not able to compute a suggested max number of worker in "
                "current system."
            )
        else:
            suggestion = (
                f"Our suggested max number of worker in current system is "
                f"{max_num_worker_suggest}"
                f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which "
                "is smaller than what this DataLoader is going to create."
            )
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. "
            f"{suggestion} Please be aware that excessive worker creation might get "
            "DataLoader running slow or even freeze, lower the worker number to avoid "
            "potential slowness/freeze if necessary.",
            stacklevel=2,
        )

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)  # type: ignore[arg-type]


class _BaseDataLoaderIter:
    """What one pass over a DataLoader shares with or without workers: the (batch)
    sampler's iterator, the base seed, and the IterableDataset length warning."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # The workers' base seed, drawn with or without workers, before the first index:
        # skipping it would shift the generator's stream, hence the shuffle order, away
        # from PyTorch's.
        self._base_seed = (
            torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        )
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self) -> Any:
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._iterable and reported is not None and self._num_yielded > reported:
            message = (
                f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                f"(when accessing len(dataloader)), but {self._num_yielded} samples have "
                "been fetched. "
            )
            if self._num_workers > 0:
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                    "for examples."
                )
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)  # type: ignore[arg-type]


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """One pass with ``num_workers=0``: indices from the (batch) sampler, samples from
    the dataset, batches from ``collate_fn``, all in the main process."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._dataset_fetcher = create_fetcher(
            self._iterable, self._dataset, self._auto_collation, self._collate_fn, self._drop_last
        )

    def _next_data(self) -> Any:
        index = self._next_index()
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """One pass (or, with ``persistent_workers``, every pass) with worker processes.

    The main process draws the indices and sends task ``(task_idx, index)`` to the
    workers round-robin, keeping ``prefetch_factor * num_workers`` tasks outstanding;
    the workers fetch and collate, and the results are yielded in ``task_idx`` order
    (or as they arrive with ``in_order=False``). The workers are shut down at the end
    of a pass (unless persistent) and when the iterator is garbage: see
    ``_WorkerProcesses`` and Note [Data loading].
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        assert loader.prefetch_factor is not None
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        self._worker_init_fn = loader.worker_init_fn
        self._processes = _WorkerProcesses(
            loader.multiprocessing_context or multiprocessing.get_context(),
            self._persistent_workers,
            [
                (
                    self._iterable,
                    [self._dataset],
                    self._auto_collation,
                    self._collate_fn,
                    self._drop_last,
                    self._base_seed,
                    self._worker_init_fn,
                    worker_id,
                    self._num_workers,
                )
                for worker_id in range(self._num_workers)
            ],
        )
        # Not __del__: see _WorkerProcesses. Without atexit, as PyTorch: at exit,
        # multiprocessing terminates the (daemon) workers itself.
        self._finalizer = weakref.finalize(self, self._processes.shutdown)
        self._finalizer.atexit = False
        self._workers = self._processes.processes
        self._index_queues = self._processes.index_queues
        self._workers_status = self._processes.status
        self._data_queue = self._processes.result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to yield
        # task_idx -> (worker_id,) while outstanding, (worker_id, data) once received.
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status[:] = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers: restart every worker's fetcher and drop what a
            # previous, unfinished pass left in the result queue.
            for index_queue in self._index_queues:
                index_queue.put(_worker._ResumeIteration())
            resume_count = self._num_workers
            while resume_count > 0:
                task_idx, _ = self._get_data()
                if isinstance(task_idx, _worker._ResumeIteration):
                    resume_count -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _check_workers_alive(self) -> None:
        """Raises RuntimeError (PyTorch's two messages, the exit as the cause) if a
        worker that still has work exited."""
        failed = [
            worker
            for worker_id, worker in enumerate(self._workers)
            if self._workers_status[worker_id] and not worker.is_alive()
        ]
        if not failed:
            return
        for worker_id, worker in enumerate(self._workers):
            if worker in failed:
                self._mark_worker_as_unavailable(worker_id)
        first = failed[0]
        if first.exitcode is not None and first.exitcode < 0:
            cause = RuntimeError(
                f"DataLoader worker (pid {first.pid}) is killed by signal: "
                f"{signal.strsignal(-first.exitcode)}. "
            )
        else:
            cause = RuntimeError(
                f"DataLoader worker (pid {first.pid}) exited unexpectedly with exit code "
                f"{first.exitcode}. Details are lost due to multiprocessing. Rerunning with "
                "num_workers=0 may give better error trace."
            )
        pids = ", ".join(str(worker.pid) for worker in failed)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from cause

    def _try_get_data(self, timeout: float = _worker.MP_STATUS_CHECK_INTERVAL) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, None)`` after ``timeout`` seconds without
        one. Waits on the result pipe and on the active workers' process sentinels
        together, so a dead worker is reported at once (PyTorch relies on a SIGCHLD
        handler for that)."""
        deadline = time.monotonic() + timeout
        # The queue's read end: private to multiprocessing, but it is the only way to
        # wait on results and on process exits in one call.
        reader = self._data_queue._reader  # type: ignore[attr-defined]
        while True:
            try:
                return True, self._data_queue.get_nowait()
            except queue.Empty:
                pass
            self._check_workers_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False, None
            sentinels = [
                worker.sentinel
                for worker_id, worker in enumerate(self._workers)
                if self._workers_status[worker_id]
            ]
            multiprocessing.connection.wait([reader, *sentinels], remaining)

    def _get_data(self) -> Any:
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self) -> Any:
        while True:
            # Skip tasks of workers that stopped (an exhausted iterable dataset) and
            # never answered.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            assert not self._processes.shut_down and self._tasks_outstanding > 0
            task_idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue

            if task_idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(task_idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[task_idx] += (data,)
            else:
                worker_id = self._task_info.pop(task_idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        assert self._tasks_outstanding < max_tasks
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(
                    self._workers_status
                ):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        self._processes.mark_unavailable(worker_id)

    def _shutdown_workers(self) -> None:
        self._finalizer()


class _WorkerProcesses:
    """The worker processes of one iterator, their queues and their status.

    It holds no reference to the iterator, which shuts it down through a
    ``weakref.finalize`` rather than ``__del__``: when the iterator dies in a reference
    cycle, the garbage collector runs the queues' own weakref finalizers (which close
    their feeder threads) before any ``__del__``, so a ``None`` put from
    ``__del__`` would never reach the workers, and each would be joined for
    ``MP_STATUS_CHECK_INTERVAL`` seconds, then terminated. The finalizer's reference
    keeps this object and its queues alive and working until it has run.

    Args:
        context: the ``multiprocessing`` context that starts the processes.
        persistent: whether the workers outlive a pass (every worker gets ``None`` at
            shutdown, even one marked unavailable).
        worker_args: per worker, the arguments of ``_worker_loop`` without the two
            queues, the event and the parent pid, which this object adds.
    """

    def __init__(self, context: Any, persistent: bool, worker_args: list[tuple]) -> None:
        self.persistent = persistent
        self.result_queue = context.Queue()
        self.done_event = context.Event()
        self.index_queues: list[Any] = []
        self.processes: list[Any] = []
        self.status: list[bool] = []
        self.shut_down = False
        # The workers' parent: this process, except with a fork server (see _worker_loop).
        parent_pid = None if context.get_start_method() == "forkserver" else os.getpid()
        for args in worker_args:
            index_queue = context.Queue()
            # Unsent tasks must not keep the main process from exiting.
            index_queue.cancel_join_thread()
            iterable, dataset_holder, *rest = args
            process = context.Process(
                target=_worker._worker_loop,
                args=(
                    iterable,
                    dataset_holder,
                    index_queue,
                    self.result_queue,
                    self.done_event,
                    *rest,
                    parent_pid,
                ),
                daemon=True,
            )
            try:
                process.start()
            except BaseException:
                self.shutdown()
                raise
            self.index_queues.append(index_queue)
            self.processes.append(process)
            self.status.append(True)

    def mark_unavailable(self, worker_id: int) -> None:
        """Sends worker ``worker_id`` the final ``None`` and stops giving it tasks (its
        results already in the queue still arrive)."""
        self.index_queues[worker_id].put(None)
        self.status[worker_id] = False

    def shutdown(self) -> None:
        """Stops the workers: ``done_event``, ``None`` to each, a join, then terminate
        for any still alive after ``MP_STATUS_CHECK_INTERVAL`` seconds. Idempotent."""
        if self.shut_down:
            return
        self.shut_down = True
        try:
            self.done_event.set()
            for worker_id in range(len(self.processes)):
                if self.persistent or self.status[worker_id]:
                    self.mark_unavailable(worker_id)
            for process in self.processes:
                process.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            for index_queue in self.index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
        finally:
            for process in self.processes:
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
