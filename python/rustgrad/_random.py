"""``Tensor.uniform_`` and ``Tensor.normal_``: in-place sampling with PyTorch's numbers.

The native functions draw from the given ``Generator`` (or the default one) in
PyTorch's order and write through the engine's in-place path: a leaf that requires
grad is refused, and the version counter is bumped once.
"""

from __future__ import annotations

from typing import Any

from . import _rustgrad
from ._rustgrad import Generator, Tensor


def _uniform_(
    self: Tensor,
    from_: float = 0.0,
    to: float = 1.0,
    *,
    generator: Generator | None = None,
    **kwargs: Any,
) -> Tensor:
    """Fills with samples uniform in ``[from, to)``, in place.

    Args:
        from_: lower bound (also accepted as the keyword ``from``).
        to: upper bound (exclusive).
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(3).uniform_(-1, 1)
        tensor([-0.0075,  0.5364, -0.8230])
    """
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _rustgrad._uniform_(self, float(from_), float(to), generator)
    return self


def _normal_(
    self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fills with normal samples of mean ``mean`` and standard deviation ``std``, in place.

    Args:
        mean: the mean.
        std: the standard deviation (>= 0).
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(2).normal_(0, 1)
        tensor([ 1.5410, -0.2934])
    """
    _rustgrad._normal_(self, float(mean), float(std), generator)
    return self


Tensor.uniform_ = _uniform_  # type: ignore[attr-defined]
Tensor.normal_ = _normal_  # type: ignore[attr-defined]
