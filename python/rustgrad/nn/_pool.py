"""Pooling functionals of ``rustgrad.nn.functional``, with PyTorch's signatures,
defaults, argument checks and messages. The work (forward and backward) is in Rust
(``crates/engine/src/ops/pool.rs``); the 1-d forms run the 2-d kernels on an
unsqueezed input and squeeze the result, as PyTorch does (so their ``grad_fn`` is
``SqueezeBackward1``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

from .. import _rustgrad
from .._compare import _scalar_name
from .._rustgrad import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
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


def _triple(value: Any, message: str) -> tuple[int, int, int]:
    """``value`` as ``(t, h, w)``: one int repeats; PyTorch's ``message`` otherwise."""
    v = _ints(value)
    if len(v) == 1:
        return (v[0], v[0], v[0])
    if len(v) == 3:
        return (v[0], v[1], v[2])
    raise RuntimeError(message)


def _omitted(stride: Any) -> builtins.bool:
    return stride is None or (isinstance(stride, Sequence) and len(stride) == 0)


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = True,
) -> tuple[Tensor, Tensor]:
    """3-d max pooling returning ``(values, indices)``; see :func:`max_pool3d`."""
    k = _triple(
        kernel_size,
        "max_pool3d: kernel_size must either be a single int, or a tuple of three ints",
    )
    s = (
        k
        if _omitted(stride)
        else _triple(
            stride,
            "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints",
        )
    )
    p = _triple(
        padding, "max_pool3d: padding must either be a single int, or a tuple of three ints"
    )
    d = _triple(
        dilation, "max_pool3d: dilation must be either a single int, or a tuple of three ints"
    )
    return _rustgrad._max_pool3d_with_indices(input, k, s, p, d, builtins.bool(ceil_mode))


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: builtins.bool = False,
    return_indices: builtins.bool = False,
) -> Any:
    """3-d max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``, with the arguments
    of :func:`max_pool2d` as ints or triples; indices are flat ``(d * H + h) * W + w``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.max_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 2)
        tensor([[[[7.]]]])
    """
    values, indices = max_pool3d_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode
    )
    return (values, indices) if return_indices else values


def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: builtins.bool = False,
    count_include_pad: builtins.bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (the arguments
    of :func:`avg_pool2d` as ints or triples).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.avg_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 2)
        tensor([[[[3.5000]]]])
    """
    k = _triple(
        kernel_size, "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"
    )
    s = (
        k
        if _omitted(stride)
        else _triple(
            stride, "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints"
        )
    )
    p = _triple(padding, "avg_pool3d: padding must be a single int, or a tuple of three ints")
    div = None if divisor_override is None else int(divisor_override)
    return _rustgrad._avg_pool3d(
        input, k, s, p, builtins.bool(ceil_mode), builtins.bool(count_include_pad), div
    )


def _adaptive_sizes(input: Tensor, output_size: Any, rank: int, message: str) -> tuple[int, ...]:
    """``output_size`` as ``rank`` ints, ``None`` keeping the input's size there."""
    if isinstance(output_size, Sequence) and not isinstance(output_size, str):
        sizes = list(output_size)
        if len(sizes) != rank:
            raise RuntimeError(message)
    else:
        sizes = [output_size] * rank
    return tuple(int(input.shape[i - rank]) if v is None else int(v) for i, v in enumerate(sizes))


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Adaptive 3-d average pooling to ``output_size`` (an int, or ``(oD, oH, oW)``
    where ``None`` keeps the input's size), over ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_avg_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 1)
        tensor([[[[3.5000]]]])
    """
    sizes = _adaptive_sizes(input, output_size, 3, "adaptive_avg_pool3d: output_size must be 3")
    return _rustgrad._adaptive_avg_pool3d(input, sizes)


def adaptive_max_pool3d_with_indices(
    input: Tensor, output_size: Any, return_indices: builtins.bool = True
) -> tuple[Tensor, Tensor]:
    """Adaptive 3-d max pooling returning ``(values, indices)``."""
    sizes = _adaptive_sizes(
        input, output_size, 3, "adaptive_max_pool3d(): internal error: output_size.size() must be 3"
    )
    return _rustgrad._adaptive_max_pool3d(input, sizes)


def adaptive_max_pool3d(
    input: Tensor, output_size: Any, return_indices: builtins.bool = False
) -> Any:
    """Adaptive 3-d max pooling to ``output_size``; with ``return_indices`` also the flat
    position ``(d * H + h) * W + w`` of each maximum.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_max_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 1)
        tensor([[[[7.]]]])
    """
    values, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size: Any, return_indices: builtins.bool = True
) -> tuple[Tensor, Tensor]:
    """Adaptive 1-d max pooling returning ``(values, indices)``."""
    _check_1d_dims(input, "adaptive_max_pool1d")
    size = _one(
        output_size, "adaptive_max_pool1d() argument 'output_size' should contain one int (got {})"
    )
    shape = list(input.shape)
    for i in range(1, len(shape)):
        if shape[i] == 0:
            raise RuntimeError(
                "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {shape} with dimension {i} being empty"
            )
    values, indices = _rustgrad._adaptive_max_pool2d(input.unsqueeze(-2), (1, size))
    return values.squeeze(-2), indices.squeeze(-2)


def adaptive_max_pool1d(
    input: Tensor, output_size: Any, return_indices: builtins.bool = False
) -> Any:
    """Adaptive 1-d max pooling over ``(N, C, L)`` or ``(C, L)``; with
    ``return_indices`` also the position of each maximum.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.adaptive_max_pool1d(rustgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[3., 2.]])
    """
    values, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def _lp(input: Tensor, norm_type: Any, pooled: Any, max_pool: Any, numel: int) -> Tensor:
    """PyTorch's power-average composition: ``(sum over the window of x^p)^(1/p)``,
    ``pooled`` the average pool of a tensor, ``max_pool`` the max pool (``p = inf``)."""
    import rustgrad as _ops

    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == float("inf"):
            return max_pool(input.abs())
        if norm_type == -float("inf"):
            return -max_pool(-input.abs())
    out = pooled(input.pow(norm_type))
    return (_ops.sign(out) * _ops.relu(_ops.abs(out))).mul(numel).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor,
    norm_type: Any,
    kernel_size: int,
    stride: Any = None,
    ceil_mode: builtins.bool = False,
) -> Tensor:
    """1-d power-average pooling: ``(sum over the window of x^p)^(1/p)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.lp_pool1d(rustgrad.tensor([[3.0, 4.0]]), 2, 2)
        tensor([[5.]])
    """
    return _lp(
        input,
        norm_type,
        lambda x: avg_pool1d(x, kernel_size, stride, 0, ceil_mode),
        lambda x: max_pool1d(x, kernel_size, stride, 0, 1, ceil_mode),
        kernel_size,
    )


def lp_pool2d(
    input: Tensor,
    norm_type: Any,
    kernel_size: Any,
    stride: Any = None,
    ceil_mode: builtins.bool = False,
) -> Tensor:
    """2-d power-average pooling: ``(sum over the window of x^p)^(1/p)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.lp_pool2d(rustgrad.full((1, 2, 2), 2.0), 1, 2)
        tensor([[[8.]]])
    """
    kw, kh = _pair(kernel_size, "lp_pool2d: kernel_size must be an int or a pair of ints")
    return _lp(
        input,
        norm_type,
        lambda x: avg_pool2d(x, kernel_size, stride, 0, ceil_mode),
        lambda x: max_pool2d(x, kernel_size, stride, 0, 1, ceil_mode),
        kw * kh,
    )


def lp_pool3d(
    input: Tensor,
    norm_type: Any,
    kernel_size: Any,
    stride: Any = None,
    ceil_mode: builtins.bool = False,
) -> Tensor:
    """3-d power-average pooling: ``(sum over the window of x^p)^(1/p)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.lp_pool3d(rustgrad.full((1, 2, 2, 2), 1.0), 1, 2)
        tensor([[[[8.]]]])
    """
    kd, kw, kh = _triple(kernel_size, "lp_pool3d: kernel_size must be an int or a triple of ints")
    return _lp(
        input,
        norm_type,
        lambda x: avg_pool3d(x, kernel_size, stride, 0, ceil_mode),
        lambda x: max_pool3d(x, kernel_size, stride, 0, 1, ceil_mode),
        kd * kw * kh,
    )


def _unpool_output_size(
    input: Tensor,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_size: Any,
) -> list[int]:
    """PyTorch's ``_unpool_output_size``: the default size, or ``output_size`` checked
    against it."""
    n = len(kernel)
    shape = list(input.shape)
    default = [(shape[d - n] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    size = list(output_size)
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ValueError(
            f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
            f"a length of '{len(size)}'"
        )
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not (lo < size[d] < hi):
            raise ValueError(
                f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})'
            )
    return [int(v) for v in size]


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool1d` (PyTorch's: ``max_unpool2d`` on a
    trailing unit dim).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> v, i = F.max_pool1d(rustgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2, return_indices=True)
        >>> F.max_unpool1d(v, i, 2)
        tensor([[0., 3., 2., 0.]])
    """
    k = (_ints(kernel_size)[0],)
    s = k if stride is None else (_ints(stride)[0],)
    p = (_ints(padding)[0],)
    size = _unpool_output_size(input, k, s, p, output_size)
    out = _rustgrad._max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), (size[0], 1))
    return out.squeeze(-1)


def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool3d`: each value written at its flat index
    in a zero volume of the pooled input's size (or ``output_size``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> v, i = F.max_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 2, return_indices=True)
        >>> F.max_unpool3d(v, i, 2).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    k = _triple(
        kernel_size, "max_unpool3d: kernel_size must be a single int, or a tuple of three ints"
    )
    s = (
        k
        if stride is None
        else _triple(stride, "max_unpool3d: stride must be a single int, or a tuple of three ints")
    )
    p = _triple(padding, "max_unpool3d: padding must be a single int, or a tuple of three ints")
    size = _unpool_output_size(input, k, s, p, output_size)
    if any(v <= 0 for v in s):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(s)}")
    return _rustgrad._max_unpool3d(input, indices, (size[0], size[1], size[2]))


def _fractional(
    input: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    samples: Tensor | None,
    rank: int,
) -> tuple[Tensor, Tensor]:
    import rustgrad as _ops

    name = f"fractional_max_pool{rank}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = list(output_ratio) if isinstance(output_ratio, Sequence) else [output_ratio] * rank
        if rank == 2 and len(ratio) > 2:
            raise ValueError(
                "fractional_max_pool2d requires output_ratio to either be a single Int or "
                "tuple of Ints."
            )
        if len(ratio) == 1:
            ratio = ratio * rank
        output_size = [math.trunc(input.shape[d - rank] * float(ratio[d])) for d in range(rank)]
    kernel = _ints(kernel_size)
    outs = _ints(output_size)
    kernel = kernel * rank if len(kernel) == 1 else kernel
    outs = outs * rank if len(outs) == 1 else outs
    if len(kernel) != rank:
        raise RuntimeError(
            f"{name}: kernel_size must either be a single Int or tuple of Ints"
            if rank == 2
            else f"{name}: kernel_size must either be a single int, or a tuple of three ints"
        )
    if len(outs) != rank:
        raise RuntimeError(
            f"{name}: output_size must either be a single Int or tuple of Ints"
            if rank == 2
            else f"{name}: output_size must either be a single int, or a tuple of three ints"
        )
    if samples is None:
        if input.dim() < rank + 1:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{max(input.dim(), 1)}, "
                f"{max(input.dim(), 1) - 1}], but got -{rank + 1})"
            )
        if not input.dtype.is_floating_point:
            raise NotImplementedError(
                f"\"check_uniform_bounds\" not implemented for '{_scalar_name(input)}'"
            )
        batch = 1 if input.dim() == rank + 1 else input.shape[0]
        samples = _ops.rand(batch, input.shape[-rank - 1], rank, dtype=input.dtype)
    fn = _rustgrad._fractional_max_pool2d if rank == 2 else _rustgrad._fractional_max_pool3d
    return fn(input, tuple(kernel), tuple(outs), samples)


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: builtins.bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """2-d fractional max pooling returning ``(values, indices)``."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: builtins.bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """2-d fractional max pooling (Graham): windows of ``kernel_size`` at pseudo-random
    steps chosen so that the output has ``output_size`` (or ``output_ratio`` times the
    input's size); ``_random_samples`` (``(N, C, 2)`` in ``[0, 1)``) fixes the steps.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.fractional_max_pool2d(rustgrad.arange(16.0).reshape(1, 4, 4), 2, output_size=1)
        tensor([[[15.]]])
    """
    values, indices = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (values, indices) if return_indices else values


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: builtins.bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """3-d fractional max pooling returning ``(values, indices)``."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: builtins.bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """3-d fractional max pooling over ``(N, C, T, H, W)`` or ``(C, T, H, W)``
    (``_random_samples`` of shape ``(N, C, 3)``); see :func:`fractional_max_pool2d`.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.fractional_max_pool3d(rustgrad.arange(8.0).reshape(1, 2, 2, 2), 2, output_size=1)
        tensor([[[[7.]]]])
    """
    values, indices = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (values, indices) if return_indices else values
