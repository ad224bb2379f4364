"""``rustgrad.Size``: the type of ``Tensor.shape``, a tuple with PyTorch's repr."""

from __future__ import annotations


class Size(tuple):
    """A tuple of dimension sizes, printed like ``torch.Size([2, 3])``.

    Example:
        >>> import rustgrad
        >>> rustgrad.zeros(2, 3).shape
        torch.Size([2, 3])
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)!r})"

    def numel(self) -> int:
        """Returns the number of elements a tensor of this size holds."""
        n = 1
        for s in self:
            n *= s
        return n
