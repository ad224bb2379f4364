"""Named tuples of ``(values, indices)``, as ``torch.return_types``.

``rustgrad.max(x, dim)`` returns ``rustgrad.return_types.max(values=..., indices=...)``:
a ``tuple`` subclass whose items are also reachable as ``.values`` and ``.indices``,
with PyTorch's ``repr``.

Example:
    >>> import rustgrad as torch
    >>> r = torch.tensor([[1.0, 3.0], [2.0, 0.0]]).max(1)
    >>> r.values, r.indices
    (tensor([3., 2.]), tensor([1, 0]))
"""

from __future__ import annotations

from typing import Any


class _ValuesIndices(tuple):  # type: ignore[type-arg]
    """A ``(values, indices)`` pair with named fields (PyTorch's structseq)."""

    __slots__ = ()
    n_fields = 2
    n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, sequence: Any) -> _ValuesIndices:
        items = tuple(sequence)
        if len(items) != 2:
            raise TypeError(
                f"{cls.__module__.replace('rustgrad', 'torch')}.{cls.__name__}() takes a "
                f"2-sequence ({len(items)}-sequence given)"
            )
        return super().__new__(cls, items)

    @property
    def values(self) -> Any:
        """The selected values."""
        return self[0]

    @property
    def indices(self) -> Any:
        """Their indices (int64)."""
        return self[1]

    def __repr__(self) -> str:
        return (
            f"torch.return_types.{type(self).__name__}(\nvalues={self[0]!r},\nindices={self[1]!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (tuple(self),))


def _make(name: str) -> type[_ValuesIndices]:
    cls = type(name, (_ValuesIndices,), {"__slots__": (), "__module__": __name__})
    cls.__doc__ = f"The ``(values, indices)`` result of ``{name}``."
    return cls


max = _make("max")
min = _make("min")
median = _make("median")
topk = _make("topk")
sort = _make("sort")

__all__ = ["max", "median", "min", "sort", "topk"]
