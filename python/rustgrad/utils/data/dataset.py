"""Datasets: map-style (``__getitem__``/``__len__``) and iterable-style (``__iter__``),
their combinations, and ``random_split`` (PyTorch's ``torch.utils.data.dataset``)."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

import rustgrad as torch

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map-style dataset: ``dataset[key]`` is a sample.

    Subclasses implement ``__getitem__`` and usually ``__len__`` (which the default
    samplers need); they may implement ``__getitems__(indices)`` to fetch a whole batch
    at once. ``a + b`` concatenates two datasets.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return i * i
        >>> (Squares() + Squares())[5]
        1
    """

    def __getitem__(self, index) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """An iterable-style dataset: a stream of samples from ``__iter__``.

    ``a + b`` chains two such datasets. A DataLoader over one takes no sampler and no
    shuffle.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(3))
        >>> list(Count() + Count())
        [0, 1, 2, 0, 1, 2]
    """

    def __add__(self, other: Dataset[_T_co]):  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples are the rows of tensors that share their first dimension.

    Args:
        *tensors (Tensor): tensors of the same size in dimension 0.

    Example:
        >>> ds = TensorDataset(rustgrad.arange(3), rustgrad.zeros(3, 2))
        >>> ds[1]
        (tensor(1), tensor([0., 0.]))
    """

    tensors: tuple

    def __init__(self, *tensors: torch.Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples of several equally long datasets side by side, as a tuple (positional
    datasets) or a dict (keyword datasets).

    Example:
        >>> StackDataset([1, 2], ["a", "b"])[1]
        (2, 'b')
        >>> StackDataset(x=[1, 2], y=["a", "b"])[0]
        {'x': 1, 'y': 'a'}
    """

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or"
                "``dict``- (via ``kwargs``) like input/output, but both types are given."
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])  # type: ignore[arg-type]
        if any(self._length != len(dataset) for dataset in parts):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """The concatenation of map-style datasets.

    Args:
        datasets (iterable): the datasets, in order.

    Example:
        >>> ds = ConcatDataset([[1, 2], [3]])
        >>> len(ds), ds[2], ds[-1]
        (3, 3, 3)
    """

    datasets: list
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable) -> list[int]:
        """The running totals of the lengths of ``sequence``'s datasets."""
        return list(itertools.accumulate(len(dataset) for dataset in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The chaining of iterable-style datasets, one stream after the other.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(2))
        >>> list(ChainDataset([Count(), Count()]))
        [0, 1, 0, 1]
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(dataset)  # type: ignore[arg-type]
        return total


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset (Dataset): the whole dataset.
        indices (sequence): the indices kept.

    Example:
        >>> s = Subset(["a", "b", "c"], [2, 0])
        >>> len(s), s[0]
        (2, 'c')
    """

    dataset: Dataset[_T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        # The DataLoader fetches batches through __getitems__, which would bypass an
        # overridden __getitem__.
        if (
            type(self).__getitem__ is not Subset.__getitem__
            and type(self).__getitems__ is Subset.__getitems__
        ):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        """The samples at ``indices`` (through the wrapped dataset's ``__getitems__``
        when it has one)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])  # type: ignore[attr-defined]
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _lengths_from_fractions(total: int, fractions: Sequence[float]) -> list[int]:
    """``floor(fraction * total)`` each, then the remainder handed out one by one
    round-robin from the first split (PyTorch's rule)."""
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * fraction))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return lengths


def random_split(
    dataset: Dataset[_T],
    lengths: Sequence[int | float],
    generator: torch.Generator | None = None,
) -> list[Subset[_T]]:
    """Splits a dataset into non-overlapping random subsets.

    Args:
        dataset (Dataset): the dataset to split.
        lengths (sequence): the subsets' lengths, summing to ``len(dataset)``, or
            fractions summing to 1 (each gets ``floor(fraction * len)``, the remainder
            goes one by one to the first subsets).
        generator (Generator, optional): the source of the permutation (default: the
            global generator).

    Returns:
        A list of :class:`Subset`, the i-th holding the next ``lengths[i]`` indices of
        ``randperm(len(dataset))``.

    Example:
        >>> g = rustgrad.Generator().manual_seed(42)
        >>> [len(s) for s in random_split(range(10), [0.3, 0.7], generator=g)]
        [3, 7]
    """
    if generator is None:
        generator = torch.default_generator
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(len(dataset), lengths)  # type: ignore[arg-type]
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = torch.randperm(sum(lengths), generator=generator).tolist()  # type: ignore[arg-type]
    ends = itertools.accumulate(lengths)
    return [
        Subset(dataset, indices[end - length : end])  # type: ignore[operator]
        for end, length in zip(ends, lengths)
    ]
