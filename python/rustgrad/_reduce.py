"""Function forms of the reductions, scans and sorts (``rustgrad.max(x, 1)`` is
``x.max(1)``), plus ``var_mean`` and ``std_mean``, which PyTorch has only as functions.

Example:
    >>> import rustgrad as torch
    >>> x = torch.tensor([[1.0, 5.0], [3.0, 2.0]])
    >>> torch.amax(x, 0)
    tensor([3., 5.])
    >>> torch.softmax(torch.zeros(2), 0)
    tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import builtins
from typing import Any

from ._rustgrad import Tensor


def _t(x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    return x


def max(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The largest element, or ``(values, indices)`` along ``dim``."""
    return _t(input).max(dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The smallest element, or ``(values, indices)`` along ``dim``."""
    return _t(input).min(dim, keepdim)


def amax(input: Tensor, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
    """The largest element over ``dim`` (int or tuple; all dims by default)."""
    return _t(input).amax(dim, keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
    """The smallest element over ``dim`` (int or tuple; all dims by default)."""
    return _t(input).amin(dim, keepdim)


def argmax(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """The index of the largest element (along ``dim``, or of the flattened tensor)."""
    return _t(input).argmax(dim, keepdim)


def argmin(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """The index of the smallest element (along ``dim``, or of the flattened tensor)."""
    return _t(input).argmin(dim, keepdim)


def softmax(input: Tensor, dim: Any, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably."""
    return _t(input).softmax(dim, dtype)


def log_softmax(input: Tensor, dim: Any, dtype: Any = None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    return _t(input).log_softmax(dim, dtype)


def logsumexp(input: Tensor, dim: Any, keepdim: builtins.bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably."""
    return _t(input).logsumexp(dim, keepdim)


def prod(
    input: Tensor, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None
) -> Tensor:
    """Product of all elements, or along ``dim``."""
    return _t(input).prod(dim, keepdim, dtype=dtype)


# ``unbiased`` not given (PyTorch refuses an explicit None).
_NOT_GIVEN: Any = object()


def _unbiased(unbiased: Any) -> dict[str, Any]:
    return {} if unbiased is _NOT_GIVEN else {"unbiased": unbiased}


def var(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = _NOT_GIVEN,
    keepdim: builtins.bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    """Variance over ``dim`` with ``correction`` (default 1) or ``unbiased``."""
    return _t(input).var(dim, keepdim=keepdim, correction=correction, **_unbiased(unbiased))


def std(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = _NOT_GIVEN,
    keepdim: builtins.bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    """Standard deviation over ``dim`` with ``correction`` (default 1) or ``unbiased``."""
    return _t(input).std(dim, keepdim=keepdim, correction=correction, **_unbiased(unbiased))


def var_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = _NOT_GIVEN,
    keepdim: builtins.bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over the same dims: outputs 0 and 1 of one
    ``VarMeanBackward0`` node, as PyTorch's."""
    return _t(input)._var_mean(dim, keepdim=keepdim, correction=correction, **_unbiased(unbiased))


def std_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = _NOT_GIVEN,
    keepdim: builtins.bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over the same dims: outputs 0 and 1 of one
    ``StdMeanBackward0`` node (see ``var_mean``)."""
    return _t(input)._var_mean(
        dim, keepdim=keepdim, correction=correction, std=True, **_unbiased(unbiased)
    )


def cumsum(input: Tensor, dim: Any, *, dtype: Any = None) -> Tensor:
    """Running sums along ``dim``."""
    return _t(input).cumsum(dim, dtype=dtype)


def cumprod(input: Tensor, dim: Any, *, dtype: Any = None) -> Tensor:
    """Running products along ``dim``."""
    return _t(input).cumprod(dim, dtype=dtype)


def norm(
    input: Tensor,
    p: Any = "fro",
    dim: Any = None,
    keepdim: builtins.bool = False,
    dtype: Any = None,
) -> Tensor:
    """The vector ``p``-norm over ``dim`` (``'fro'`` is the 2-norm)."""
    return _t(input).norm(p, dim, keepdim, dtype)


def nansum(
    input: Tensor, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None
) -> Tensor:
    """Sum over ``dim`` treating NaN as zero."""
    return _t(input).nansum(dim, keepdim, dtype=dtype)


def nanmean(
    input: Tensor, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None
) -> Tensor:
    """Mean over ``dim`` of the elements that are not NaN."""
    return _t(input).nanmean(dim, keepdim, dtype=dtype)


def all(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """Whether every element (over ``dim``) is nonzero."""
    return _t(input).all(dim, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """Whether any element (over ``dim``) is nonzero."""
    return _t(input).any(dim, keepdim)


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """The number of nonzero elements (over ``dim``)."""
    return _t(input).count_nonzero(dim)


def median(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The lower median, or ``(values, indices)`` along ``dim``."""
    return _t(input).median(dim, keepdim)


def topk(
    input: Tensor,
    k: Any,
    dim: Any = -1,
    largest: builtins.bool = True,
    sorted: builtins.bool = True,
) -> Any:
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``."""
    return _t(input).topk(k, dim, largest, sorted)


def sort(
    input: Tensor,
    dim: Any = -1,
    descending: builtins.bool = False,
    *,
    stable: builtins.bool = False,
) -> Any:
    """Sorts along ``dim``: ``(values, indices)``."""
    return _t(input).sort(dim, descending, stable=stable)


def argsort(
    input: Tensor, dim: Any = -1, descending: builtins.bool = False, stable: builtins.bool = False
) -> Tensor:
    """The indices that sort along ``dim``."""
    return _t(input).argsort(dim, descending, stable)


def unique(
    input: Tensor,
    sorted: builtins.bool = True,
    return_inverse: builtins.bool = False,
    return_counts: builtins.bool = False,
    dim: Any = None,
) -> Any:
    """The sorted distinct elements, with ``inverse`` indices and ``counts`` on request."""
    return _t(input).unique(sorted, return_inverse, return_counts, dim)


def vector_norm(
    x: Tensor,
    ord: Any = 2,
    dim: Any = None,
    keepdim: builtins.bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """``sum(|x|^ord)^(1/ord)`` over ``dim`` (``rustgrad.linalg.vector_norm``)."""
    if isinstance(ord, str):
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}"
        )
    return _t(x).norm(ord, dim, keepdim, dtype)
