"""Fetchers: turn one index (or one list of indices) from the DataLoader's sampler into a
batch, for a map-style or an iterable-style dataset (PyTorch's
``torch.utils.data._utils.fetch``). The main process uses them with ``num_workers=0``,
each worker process with ``num_workers > 0`` (Note [Data loading])."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable


class _DatasetFetcher:
    """What both fetchers keep: the dataset and the loader's collation settings."""

    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any], drop_last: bool
    ) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index: Any) -> Any:
        """The batch for one index (or list of indices) of the sampler."""
        raise NotImplementedError


class _MapDatasetFetcher(_DatasetFetcher):
    """Reads ``dataset[i]`` for each index of a batch (or ``__getitems__`` when the
    dataset has it) and collates the samples."""

    def fetch(self, possibly_batched_index: Any) -> Any:
        """The collated batch for a list of indices (one sample for a single index
        when auto-collation is off)."""
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            data = getitems(possibly_batched_index)
        else:
            data = [self.dataset[i] for i in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher(_DatasetFetcher):
    """Draws ``len(index)`` samples from one iterator over the dataset per batch;
    raises StopIteration once the iterator is exhausted (or, with ``drop_last``, when
    the last batch would be short)."""

    def __init__(
        self,
        dataset: Iterable,
        auto_collation: bool,
        collate_fn: Callable[[Any], Any],
        drop_last: bool,
    ) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index: Any) -> Any:
        """The next batch of the dataset's iterator (the index only gives its size)."""
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(
    iterable: bool,
    dataset: Any,
    auto_collation: bool,
    collate_fn: Callable[[Any], Any],
    drop_last: bool,
) -> _DatasetFetcher:
    """The fetcher for an iterable-style (``iterable=True``) or map-style dataset."""
    kind = _IterableDatasetFetcher if iterable else _MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)
