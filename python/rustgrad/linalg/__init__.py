"""``rustgrad.linalg``: the linear-algebra functions rustgrad has (``vector_norm``,
``matrix_norm``, ``norm``).

Example:
    >>> import rustgrad as torch
    >>> torch.linalg.norm(torch.tensor([[3.0, 0.0], [0.0, 4.0]]))
    tensor(5.)
"""

from __future__ import annotations

from typing import Any

from .._reduce import vector_norm
from .._rustgrad import Tensor

__all__ = ["matrix_norm", "norm", "vector_norm"]


def _matrix_dims(A: Tensor, dim: Any, name: str) -> tuple[int, int]:
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (int(d) for d in dim)
    n = A.dim()
    w0, w1 = d0 % n if -n <= d0 < n else d0, d1 % n if -n <= d1 < n else d1
    for d in (d0, d1):
        if not -n <= d < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
            )
    if w0 == w1:
        raise RuntimeError(f"linalg.{name}: dims must be different. Got ({d0}, {d1})")
    return w0, w1


def matrix_norm(
    A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """Matrix norm over the two dims ``dim``: ``'fro'`` (Frobenius), ``1``, ``-1``,
    ``inf`` and ``-inf`` (max/min absolute column/row sum). ``'nuc'``, ``2`` and ``-2``
    need singular values, which rustgrad does not have yet (NotImplementedError).

    Example:
        >>> torch.linalg.matrix_norm(torch.ones(2, 2))
        tensor(2.)
    """
    d0, d1 = _matrix_dims(A, dim, "matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        if ord == "nuc":
            raise NotImplementedError("linalg.matrix_norm: ord='nuc' is not supported by rustgrad")
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in (1, -1, float("inf"), float("-inf")):
        if dtype is not None:
            A = A.to(dtype)
        # 1 / -1 sum over rows (dim d0) then reduce over columns; inf / -inf the reverse.
        summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(summed, keepdim=True)
        out = sums.amax(reduced, keepdim=True) if ord > 0 else sums.amin(reduced, keepdim=True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    if ord in (2, -2):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord} is not supported by rustgrad")
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """``torch.linalg.norm``: a vector norm (1-D input or int ``dim``) or a matrix norm
    (2-D input, a string ``ord``, or a pair ``dim``). ``ord=None`` is the 2-norm of the
    flattened input (Frobenius for matrices).

    Example:
        >>> torch.linalg.norm(torch.tensor([3.0, 4.0]))
        tensor(5.)
    """
    if isinstance(dim, int):
        dim = (dim,)
    flat_only = "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D."
    if isinstance(ord, str):
        if dim is None:
            if A.dim() > 2:
                raise RuntimeError(f"{flat_only} Got {A.dim()}D.")
            dim = (-2, -1)
        elif len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dim)}")
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.dim() != 1:
            raise RuntimeError(f"{flat_only} Got {A.dim()}D.")
    elif len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)
