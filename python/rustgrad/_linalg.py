"""Linear-algebra ops: function forms of the products (``rustgrad.bmm``, ``mv``,
``dot``, ``outer``, ``addmm``, ``addmv``, ``baddbmm``, ``addbmm``). The Tensor methods
and their backward rules are in Rust (``crates/engine/src/ops/linalg.rs``).

Example:
    >>> import rustgrad as torch
    >>> torch.dot(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
    tensor(11.)
"""

from __future__ import annotations

import builtins
from typing import Any

from ._rustgrad import Tensor

__all__ = [
    "addbmm",
    "addmm",
    "addmv",
    "baddbmm",
    "bmm",
    "dot",
    "einsum",
    "mv",
    "outer",
    "tensordot",
]


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size.

    Args:
        input: ``(b, n, m)``.
        mat2: ``(b, m, p)``.

    Returns:
        ``(b, n, p)``.
    """
    return input.bmm(mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product: ``(n, m) @ (m,)`` is ``(n,)``."""
    return input.mv(vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Dot product of two 1-D tensors with the same number of elements (a 0-d tensor)."""
    return input.dot(tensor)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-D tensors: ``out[i, j] = input[i] * vec2[j]``."""
    return input.outer(vec2)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product.

    With ``beta=0`` the values of ``input`` (even NaN) are ignored.
    """
    return input.addmm(mat1, mat2, beta=beta, alpha=alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return input.addmv(mat, vec, beta=beta, alpha=alpha)


def baddbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return input.baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def addbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2).sum(0)``."""
    return input.addbmm(batch1, batch2, beta=beta, alpha=alpha)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contracts dims of ``a`` with dims of ``b``.

    Args:
        a: the first tensor.
        b: the second tensor.
        dims: an int ``n`` (the last ``n`` dims of ``a`` with the first ``n`` of ``b``),
            or a pair of lists of dims ``([dims of a], [dims of b])`` (also a tensor).

    Returns:
        The free dims of ``a`` followed by those of ``b``.

    Example:
        >>> torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=1).shape
        torch.Size([2, 4])
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, builtins.bool):
        raise TypeError("tensordot(): argument 'dims' must be int or a pair of lists, not bool")
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return a._tensordot(b, list(range(a.dim() - dims, a.dim())), list(range(dims)))
    if isinstance(dims, (list, tuple)) and len(dims) == 2:
        dims_a, dims_b = dims
        if isinstance(dims_a, int):
            raise TypeError(
                "tensordot(): argument 'dims_self' (position 3) must be tuple of ints, not int"
            )
        return a._tensordot(b, list(dims_a), list(dims_b))
    raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")


def _sublist_letter(n: Any) -> str:
    if n is Ellipsis:
        return "..."
    if isinstance(n, int) and not isinstance(n, builtins.bool) and 0 <= n < 26:
        return chr(ord("A") + n)
    if isinstance(n, int) and not isinstance(n, builtins.bool) and 26 <= n < 52:
        return chr(ord("a") + n - 26)
    if not isinstance(n, int):
        raise TypeError(
            f"einsum(): subscript in subscript list must be an int or Ellipsis, "
            f"not {type(n).__name__}"
        )
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def _sublist_equation(args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """PyTorch's sublist format ``einsum(op1, sub1, op2, sub2, ..., [out])`` as an
    equation string and its operands (ints 0-25 are ``A``-``Z``, 26-51 ``a``-``z``)."""
    pairs = args[: len(args) - len(args) % 2]
    for sub in pairs[1::2]:
        if not isinstance(sub, (list, tuple)):
            raise TypeError(
                f"einsum(): the subscripts of an operand must be a list, not {type(sub).__name__}"
            )
    equation = ",".join("".join(_sublist_letter(s) for s in sub) for sub in pairs[1::2])
    if len(args) % 2 == 1:
        out = args[-1]
        if not isinstance(out, (list, tuple)):
            raise TypeError(
                f"einsum(): the output subscripts must be a list, not {type(out).__name__}"
            )
        equation += "->" + "".join(_sublist_letter(s) for s in out)
    return equation, tuple(pairs[0::2])


def einsum(*args: Any) -> Tensor:
    """Einstein summation: ``torch.einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Supports explicit and implicit outputs, repeated subscripts (``"ii->i"`` is the
    diagonal, ``"ii"`` the trace), ``...`` for broadcast batch dims, the operands given
    either as arguments or as one list (``einsum("ij,jk", [a, b])``), and PyTorch's
    sublist format ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (subscripts are ints in
    ``[0, 52)`` or ``...``; the trailing output list is optional).

    Example:
        >>> torch.einsum("i,i->", torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
        tensor(11.)
    """
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, "
            "or at least one operand and its subscripts list"
        )
    if isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, "
            "or at least one operand and its subscripts list"
        )
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(
                f"einsum(): argument 'operands' must be tuple of Tensors, "
                f"but found element of type {type(op).__name__} at pos {i}"
            )
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    return Tensor._einsum(equation, list(operands))
