"""``rustgrad.special``: the special functions rustgrad has (``xlogy``, ``xlog1py``).

Example:
    >>> import rustgrad as torch
    >>> torch.special.xlogy(torch.tensor([0.0, 1.0]), torch.tensor([0.0, 2.0]))
    tensor([0.0000, 0.6931])
"""

from __future__ import annotations

from .._extra_ops import xlog1py, xlogy

__all__ = ["xlog1py", "xlogy"]
