"""Samplers: the strategies that turn a dataset's length into a stream of indices.

PyTorch's ``torch.utils.data.sampler``, with the same draws from the same generator, so
a seeded ``Generator`` gives PyTorch's indices (Note [Data loading]).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import rustgrad as torch

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

_T_co = TypeVar("_T_co", covariant=True)

# RandomSampler with replacement draws its indices in chunks of this many, as PyTorch
# does; the chunking decides how many numbers each randint call consumes.
_REPLACEMENT_CHUNK = 32


def _is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _seeded_from_global() -> torch.Generator:
    """A fresh generator seeded by one draw from the global generator (PyTorch's way of
    making an unseeded RandomSampler follow ``manual_seed``)."""
    seed = int(torch.empty((), dtype=torch.int64).random_().item())
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


class Sampler(Generic[_T_co]):
    """Base class for all samplers.

    A subclass provides ``__iter__`` over indices (or lists of indices, for a batch
    sampler) and may provide ``__len__``.

    Example:
        >>> class Reversed(Sampler[int]):
        ...     def __init__(self, data):
        ...         self.data = data
        ...     def __iter__(self):
        ...         return iter(range(len(self.data) - 1, -1, -1))
    """

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Samples ``0, 1, ..., len(data_source) - 1`` in order.

    Args:
        data_source (Sized): the dataset; only its ``len`` is used.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Samples indices at random: a permutation, or with replacement.

    Args:
        data_source (Sized): the dataset; only its ``len`` is used.
        replacement (bool): draw with replacement (default ``False``).
        num_samples (int, optional): how many indices to draw (default
            ``len(data_source)``); without replacement, more than the length repeats
            whole permutations.
        generator (Generator, optional): the source of randomness; without one, each
            iteration seeds a fresh generator from the global one.

    Example:
        >>> g = rustgrad.Generator().manual_seed(0)
        >>> list(RandomSampler(range(5), generator=g))  # PyTorch's permutation
        [4, 0, 1, 3, 2]
    """

    data_source: Sized
    replacement: bool

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        if not _is_positive_int(self.num_samples):
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        """The number of indices one iteration yields."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _seeded_from_global()
        if self.replacement:
            for _ in range(self.num_samples // _REPLACEMENT_CHUNK):
                yield from torch.randint(
                    high=n, size=(_REPLACEMENT_CHUNK,), dtype=torch.int64, generator=generator
                ).tolist()
            yield from torch.randint(
                high=n,
                size=(self.num_samples % _REPLACEMENT_CHUNK,),
                dtype=torch.int64,
                generator=generator,
            ).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from torch.randperm(n, generator=generator).tolist()
            yield from torch.randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """Samples the given indices in a random order, without replacement.

    Args:
        indices (sequence): the indices to sample from.
        generator (Generator, optional): the source of randomness (default: the global
            generator).

    Example:
        >>> sorted(SubsetRandomSampler([3, 5, 7]))
        [3, 5, 7]
    """

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: torch.Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in torch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Samples ``0 .. len(weights) - 1`` with probabilities proportional to ``weights``.

    Args:
        weights (sequence): non-negative weights, not necessarily summing to one.
        num_samples (int): how many indices to draw.
        replacement (bool): draw with replacement (default ``True``); without it an
            index is drawn at most once.
        generator (Generator, optional): the source of randomness.

    Example:
        >>> g = rustgrad.Generator().manual_seed(0)
        >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], 3, generator=g))
        [1, 1, 1]
    """

    weights: torch.Tensor
    num_samples: int
    replacement: bool

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights_tensor = torch.as_tensor(weights, dtype=torch.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError(
                "weights should be a 1d sequence but given "
                f"weights have shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = torch.multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of another sampler into lists of ``batch_size``.

    Args:
        sampler (Sampler or Iterable): the indices to group.
        batch_size (int): the size of a batch.
        drop_last (bool): drop the last batch if it is smaller than ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool
    ) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while True:
            batch = list(itertools.islice(indices, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
