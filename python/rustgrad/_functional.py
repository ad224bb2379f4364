"""Function forms of tensor methods (``rustgrad.exp(x)`` is ``x.exp()``)."""

from __future__ import annotations

import builtins
from typing import Any

from . import _rustgrad
from ._rustgrad import Tensor, empty, full, rand, randn


def _t(x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    return x


def abs(input: Tensor) -> Tensor:
    """Elementwise absolute value."""
    return _t(input).abs()


def neg(input: Tensor) -> Tensor:
    """Elementwise negation."""
    return _t(input).neg()


def exp(input: Tensor) -> Tensor:
    """Elementwise exponential."""
    return _t(input).exp()


def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm."""
    return _t(input).log()


def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root."""
    return _t(input).sqrt()


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return _t(input).tanh()


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic sigmoid."""
    return _t(input).sigmoid()


def relu(input: Tensor) -> Tensor:
    """Elementwise ``max(x, 0)``."""
    return _t(input).relu()


def add(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    return _t(input).add(other, alpha=alpha)


def sub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    return _t(input).sub(other, alpha=alpha)


def mul(input: Tensor, other: Any) -> Tensor:
    """``input * other`` with broadcasting."""
    return _t(input).mul(other)


def div(input: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other`` with broadcasting: true division, or rounded toward zero
    (``rounding_mode='trunc'``) or down (``'floor'``, zero gradient)."""
    return _t(input).div(other, rounding_mode=rounding_mode)


def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent``; either may be a number."""
    return input**exponent


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with broadcasting (``input @ other``)."""
    return _t(input).matmul(other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two 2-D matrices."""
    return _t(input).mm(mat2)


def sum(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """Sum of all elements, or over ``dim``."""
    return _t(input).sum(dim, keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
    """Mean of all elements, or over ``dim``."""
    return _t(input).mean(dim, keepdim)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamps every element into ``[min, max]``."""
    return _t(input).clamp(min, max)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps two dims (a view)."""
    return _t(input).transpose(dim0, dim1)


def eq(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``==`` (bool tensor)."""
    return _t(input).eq(other)


def ne(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``!=`` (bool tensor)."""
    return _t(input).ne(other)


def lt(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``<`` (bool tensor)."""
    return _t(input).lt(other)


def le(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``<=`` (bool tensor)."""
    return _t(input).le(other)


def gt(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``>`` (bool tensor)."""
    return _t(input).gt(other)


def ge(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``>=`` (bool tensor)."""
    return _t(input).ge(other)


def _like(
    input: Tensor,
    make: Any,
    dtype: Any,
    device: Any,
    requires_grad: builtins.bool,
) -> Tensor:
    """``make(shape, dtype=..., device=..., requires_grad=...)`` with ``input``'s shape,
    and its dtype unless one is given (``device`` is checked like any ``device=``), laid
    out as PyTorch's ``preserve_format``: ``input``'s strides when it is non-overlapping
    and dense, else dense strides in its dims' memory order (Note [Preserved strides])."""
    result = make(
        tuple(_t(input).shape),
        dtype=input.dtype if dtype is None else dtype,
        # input's device, not the default one (a meta input gives a meta result).
        device=input.device if device is None else device,
        requires_grad=requires_grad,
    )
    if result.is_meta:
        return result
    laid_out = _rustgrad._empty_like_preserve(input, result.dtype)
    if laid_out.stride() == result.stride():
        return result
    laid_out.copy_(result.detach())
    return laid_out.requires_grad_(requires_grad)


def zeros_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False
) -> Tensor:
    """A tensor of zeros with ``input``'s shape (and dtype unless given).

    Example:
        >>> rustgrad.zeros_like(rustgrad.ones(2, dtype=rustgrad.int64))
        tensor([0, 0])
    """
    return _like(input, lambda s, **kw: full(s, 0, **kw), dtype, device, requires_grad)


def ones_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False
) -> Tensor:
    """A tensor of ones with ``input``'s shape (and dtype unless given)."""
    return _like(input, lambda s, **kw: full(s, 1, **kw), dtype, device, requires_grad)


def full_like(
    input: Tensor,
    fill_value: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value``, with ``input``'s shape (and dtype unless given)."""
    return _like(input, lambda s, **kw: full(s, fill_value, **kw), dtype, device, requires_grad)


def empty_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False
) -> Tensor:
    """An (in rustgrad, zero-filled) tensor with ``input``'s shape and dtype unless given."""
    return _like(input, lambda s, **kw: empty(*s, **kw), dtype, device, requires_grad)


def rand_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False
) -> Tensor:
    """Uniform samples in [0, 1) with ``input``'s shape (and dtype unless given)."""
    return _like(input, lambda s, **kw: rand(*s, **kw), dtype, device, requires_grad)


def randn_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False
) -> Tensor:
    """Standard normal samples with ``input``'s shape (and dtype unless given)."""
    return _like(input, lambda s, **kw: randn(*s, **kw), dtype, device, requires_grad)
