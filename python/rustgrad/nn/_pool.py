"""Pooling functionals of ``rustgrad.nn.functional``, with PyTorch's signatures,
defaults, argument checks and messages. The work (forward and backward) is in Rust
(``crates/engine/src/ops/pool.rs``); the 1-d forms run the 2-d kernels on an
unsqueezed input and squeeze the result, as PyTorch does (so their ``grad_fn`` is
``SqueezeBackward1``).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_unpool2d",
]


def _ints(value: Any) -> list[int]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [int(v) for v in value]
    if isinstance(value, builtins.bool) or not isinstance(value, int):
        # Tensors and other integer-likes go through __index__, as PyTorch's parser.
        return [value.__index__()]
    return [int(value)]


def _pair(value: Any, message: str, allow_empty: builtins.bool = False) -> tuple[int, int]:
    """``value`` as ``(h, w)``: one int repeats; PyTorch's ``message`` otherwise."""
    v = _ints(value)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) == 2:
        return (v[0], v[1])
    raise RuntimeError(message)


def _one(value: Any, message: str) -> int:
    v = _ints(value)
    if len(v) != 1:
        raise RuntimeError(message.format(len(v)))
    return v[0]


def _check_1d_dims(input: Tensor, op: str) -> None:
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for "
            f"argument #1 'self' (while checking arguments for {op})"
        )


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = True,
) -> tuple[Tensor, Tensor]:
    """2-d max pooling returning ``(values, indices)``; see :func:`max_pool2d`."""
    k = _pair(
        kernel_size, "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"
    )
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        s = k
    else:
        s = _pair(
            stride,
            "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
        )
    p = _pair(padding, "max_pool2d: padding must either be a single int, or a tuple of two ints")
    d = _pair(dilation, "max_pool2d: dilation must be either a single int, or a tuple of two ints")
    return _rustgrad._max_pool2d_with_indices(input, k, s, p, d, builtins.bool(ceil_mode))


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = False,
) -> Any:
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)``.

    Args:
        input: the tensor to pool.
        kernel_size: window size, an int or ``(kH, kW)``.
        stride: step between windows (default: ``kernel_size``).
        padding: implicit ``-inf`` padding on both sides, at most half the window.
        dilation: spacing between window elements.
        ceil_mode: round the output size up instead of down.
        return_indices: also return the flat ``h * W + w`` position of each maximum.

    Returns:
        The pooled tensor (``grad_fn`` ``MaxPool2DWithIndicesBackward0``), or
        ``(values, indices)`` with ``return_indices``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.max_pool2d(rustgrad.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    values, indices = max_pool2d_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode
    )
    return (values, indices) if return_indices else values


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = True,
) -> tuple[Tensor, Tensor]:
    """1-d max pooling returning ``(values, indices)``; see :func:`max_pool1d`."""
    _check_1d_dims(input, "max_pool1d")
    k = _ints(kernel_size)[0]
    s = (
        k
        if stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
        else _ints(stride)[0]
    )
    p = _ints(padding)[0]
    d = _ints(dilation)[0]
    values, indices = _rustgrad._max_pool2d_with_indices(
        input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), builtins.bool(ceil_mode)
    )
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = False,
) -> Any:
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)``, with PyTorch's arguments and
    checks (see :func:`max_pool2d`).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.max_pool1d(rustgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[3., 2.]])
    """
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    shape = list(input.shape)
    if not ((len(shape) == 2 and 0 not in shape) or (len(shape) == 3 and 0 not in shape[1:])):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
            f"size for input, but got:{shape}"
        )
    k = _one(
        kernel_size,
        "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but "
        "got size {}",
    )
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        s = k
    else:
        s = _one(
            stride,
            "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 "
            "but got size {}",
        )
    p = _one(
        padding,
        "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got "
        "size {}",
    )
    d = _one(
        dilation,
        "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got "
        "size {}",
    )
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
            f"kernel_size={k}"
        )
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    length = shape[-1]
    effective = (k - 1) * d + 1
    numerator = length + 2 * p - effective + (s - 1 if ceil_mode else 0)
    out = numerator // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    values, _ = _rustgrad._max_pool2d_with_indices(
        input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), builtins.bool(ceil_mode)
    )
    return values.squeeze(-2)


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: builtins.bool = False,
    count_include_pad: builtins.bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-d average pooling over ``(N, C, H, W)`` or ``(C, H, W)``.

    Args:
        input: the tensor to pool.
        kernel_size: window size, an int or ``(kH, kW)``.
        stride: step between windows (default: ``kernel_size``).
        padding: implicit zero padding on both sides, at most half the window.
        ceil_mode: round the output size up instead of down.
        count_include_pad: divide by the window size including padding.
        divisor_override: divide by this instead.

    Returns:
        The pooled tensor (``grad_fn`` ``AvgPool2DBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.avg_pool2d(rustgrad.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """
    k = _pair(
        kernel_size, "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"
    )
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        s = k
    else:
        s = _pair(
            stride,
            "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
        )
    p = _pair(padding, "avg_pool2d: padding must either be a single int, or a tuple of two ints")
    div = None if divisor_override is None else int(divisor_override)
    return _rustgrad._avg_pool2d(
        input, k, s, p, builtins.bool(ceil_mode), builtins.bool(count_include_pad), div
    )


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: builtins.bool = False,
    count_include_pad: builtins.bool = True,
) -> Tensor:
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)`` (see :func:`avg_pool2d`).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.avg_pool1d(rustgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    _check_1d_dims(input, "avg_pool1d")
    k = _one(kernel_size, "avg_pool1d() argument 'kernel_size' should contain one int (got {})")
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        s = k
    else:
        s = _one(stride, "avg_pool1d() argument 'stride' should contain one int (got {})")
    p = _one(padding, "avg_pool1d() argument 'padding' should contain one int (got {})")
    out = _rustgrad._avg_pool2d(
        input.unsqueeze(-2),
        (1, k),
        (1, s),
        (0, p),
        builtins.bool(ceil_mode),
        builtins.bool(count_include_pad),
        None,
    )
    return out.squeeze(-2)


def _adaptive_size(input: Tensor, output_size: Any, op: str) -> tuple[int, int]:
    if isinstance(output_size, Sequence) and not isinstance(output_size, str):
        sizes = list(output_size)
        if len(sizes) != 2:
            raise RuntimeError(f"{op}: output_size must be 2")
    else:
        sizes = [output_size, output_size]
    # None keeps the input's size along that dim (PyTorch's _list_with_default).
    return tuple(  # type: ignore[return-value]
        int(input.shape[-2 + i]) if v is None else int(v) for i, v in enumerate(sizes)
    )


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Adaptive 2-d average pooling to ``output_size`` (an int, or ``(oH, oW)`` where
    ``None`` keeps the input's size). Windows are PyTorch's:
    ``floor(i * H / oH) .. ceil((i + 1) * H / oH)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_avg_pool2d(rustgrad.arange(16.0).reshape(1, 4, 4), 1)
        tensor([[[7.5000]]])
    """
    return _rustgrad._adaptive_avg_pool2d(
        input, _adaptive_size(input, output_size, "adaptive_avg_pool2d")
    )


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Adaptive 1-d average pooling over ``(N, C, L)`` or ``(C, L)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_avg_pool1d(rustgrad.tensor([[1.0, 3.0, 2.0]]), 1)
        tensor([[2.]])
    """
    _check_1d_dims(input, "adaptive_avg_pool1d")
    size = _one(
        output_size, "adaptive_avg_pool1d() argument 'output_size' should contain one int (got {})"
    )
    return _rustgrad._adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def adaptive_max_pool2d_with_indices(
    input: Tensor, output_size: Any, return_indices: builtins.bool = True
) -> tuple[Tensor, Tensor]:
    """Adaptive 2-d max pooling returning ``(values, indices)``."""
    return _rustgrad._adaptive_max_pool2d(
        input, _adaptive_size(input, output_size, "adaptive_max_pool2d")
    )


def adaptive_max_pool2d(
    input: Tensor, output_size: Any, return_indices: builtins.bool = False
) -> Any:
    """Adaptive 2-d max pooling to ``output_size``; with ``return_indices`` also the
    flat position of each maximum in its input plane.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_max_pool2d(rustgrad.arange(16.0).reshape(1, 4, 4), 1)
        tensor([[[15.]]])
    """
    values, indices = adaptive_max_pool2d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool2d`: each value written at its index in a
    zero plane of the pooled input's size (or ``output_size``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.arange(16.0).reshape(1, 1, 4, 4)
        >>> v, i = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(v, i, 2)[0, 0, 1]
        tensor([ 0.,  5.,  0.,  7.])
    """
    k = _pair(
        kernel_size, "max_unpool2d: kernel_size must either be a single int, or a tuple of two ints"
    )
    s = (
        k
        if stride is None
        else _pair(stride, "max_unpool2d: stride must be a single int, or a tuple of two ints")
    )
    p = _pair(padding, "max_unpool2d: padding must be a single int, or a tuple of two ints")
    shape = list(input.shape)
    default = (
        [(shape[-2 + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(2)]
        if len(shape) >= 2
        else [0, 0]
    )
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) == 4:
            size = size[2:]
        if len(size) != 2:
            raise ValueError(
                "output_size should be a sequence containing 2 or 4 elements, but it has a "
                f"length of '{len(size)}'"
            )
        for d in range(2):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not (lo < size[d] < hi):
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})'
                )
    return _rustgrad._max_unpool2d(input, indices, (int(size[0]), int(size[1])))
