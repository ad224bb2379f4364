"""``DataLoader``: batches from a dataset, in the main process (PyTorch's
``torch.utils.data.dataloader`` with ``num_workers=0``; Note [Data loading])."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Generic, TypeVar

import rustgrad as torch

from ._collate import default_collate, default_convert
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


def get_worker_info() -> None:
    """Information about the current data-loading worker: always ``None``, since
    rustgrad loads data in the main process only."""
    return None


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
        num_workers (int): must be 0: worker processes are not supported yet.
        collate_fn (Callable, optional): merges a list of samples into a batch
            (default :func:`default_collate`).
        pin_memory (bool): accepted and ignored (there is no accelerator).
        drop_last (bool): drop the last incomplete batch.
        timeout (float): must be 0 without workers.
        worker_init_fn, multiprocessing_context, prefetch_factor, persistent_workers,
            pin_memory_device, in_order: PyTorch's worker options, accepted with
            ``num_workers=0`` as PyTorch accepts them.
        generator (Generator, optional): the source of the shuffle order and of each
            iteration's base seed.

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
        if num_workers > 0:
            raise NotImplementedError(
                f"DataLoader got num_workers={num_workers}, but rustgrad does not support "
                "worker processes yet; use num_workers=0 to load data in the main process."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if timeout > 0:
            raise ValueError("timeout option needs num_workers > 0")
        if prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set "
                "prefetch_factor to None."
            )
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError(
                "multiprocessing_context can only be used with multi-process loading "
                f"(num_workers > 0), but got num_workers={num_workers}"
            )

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
        self.__initialized = True

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

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        return _SingleProcessDataLoaderIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)  # type: ignore[arg-type]


class _SingleProcessDataLoaderIter:
    """One pass over a DataLoader: indices from the (batch) sampler, samples from the
    dataset, batches from ``collate_fn``."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._sampler_iter = iter(self._index_sampler)
        # PyTorch draws the workers' base seed here even without workers; drawing it
        # too keeps the generator's stream, hence the shuffle order, identical.
        self._base_seed = (
            torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        )
        self._dataset_iter = iter(self._dataset) if self._iterable else None
        self._ended = False
        self._num_yielded = 0

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)  # type: ignore[arg-type]

    def __next__(self) -> Any:
        index = next(self._sampler_iter)
        data = self._fetch_iterable(index) if self._iterable else self._fetch_map(index)
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._iterable and reported is not None and self._num_yielded > reported:
            warnings.warn(
                f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                f"(when accessing len(dataloader)), but {self._num_yielded} samples have "
                "been fetched. ",
                stacklevel=2,
            )
        return data

    def _fetch_map(self, index: Any) -> Any:
        if not self._auto_collation:
            return self._collate_fn(self._dataset[index])
        getitems = getattr(self._dataset, "__getitems__", None)
        if getitems:
            data = getitems(index)
        else:
            data = [self._dataset[i] for i in index]
        return self._collate_fn(data)

    def _fetch_iterable(self, index: Any) -> Any:
        if self._ended:
            raise StopIteration
        assert self._dataset_iter is not None
        if not self._auto_collation:
            return self._collate_fn(next(self._dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if not data or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return self._collate_fn(data)
