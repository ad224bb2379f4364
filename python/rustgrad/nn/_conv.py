"""Convolutions and linear layers of ``rustgrad.nn.functional``, with PyTorch's
signatures, defaults, grad_fn names and errors: ``conv1d/2d/3d``,
``conv_transpose1d/2d/3d``, ``linear``, ``bilinear``, ``unfold``, ``fold``,
``pixel_shuffle``, ``pixel_unshuffle``. The work is done in Rust
(``rustgrad::ops::conv``); this module only normalises the arguments.
"""

from __future__ import annotations

import builtins
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = [
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "linear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "unfold",
]

_IntOrTuple = builtins.int | tuple[builtins.int, ...] | list[builtins.int]


def _ints(fn: str, name: str, value: Any) -> list[builtins.int]:
    """An int or a sequence of ints as a list (PyTorch's ``IntArrayRef`` argument)."""
    if isinstance(value, builtins.bool) or not isinstance(value, (builtins.int, tuple, list)):
        if hasattr(value, "__index__") and not isinstance(value, builtins.bool):
            return [value.__index__()]
        raise TypeError(
            f"{fn}(): argument '{name}' must be tuple of ints, not {type(value).__name__}"
        )
    if isinstance(value, builtins.int):
        return [value]
    out = []
    for v in value:
        if isinstance(v, builtins.bool) or not hasattr(v, "__index__"):
            raise TypeError(
                f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                f"{type(v).__name__} at pos {len(out)}"
            )
        out.append(v.__index__())
    return out


def _tensor(fn: str, name: str, value: Any, optional: builtins.bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(value).__name__}")
    return value


def _int(fn: str, name: str, value: Any) -> builtins.int:
    if isinstance(value, builtins.bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")
    return value.__index__()


def _conv(
    nd: builtins.int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: _IntOrTuple,
    padding: _IntOrTuple | str,
    dilation: _IntOrTuple,
    groups: builtins.int,
) -> Tensor:
    fn = f"conv{nd}d"
    _tensor(fn, "input", input)
    _tensor(fn, "weight", weight)
    _tensor(fn, "bias", bias, optional=True)
    mode = None
    pad = [0]
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        mode = padding
    else:
        pad = _ints(fn, "padding", padding)
    return _rustgrad._conv(
        nd,
        input,
        weight,
        bias,
        _ints(fn, "stride", stride),
        pad,
        mode,
        _ints(fn, "dilation", dilation),
        _int(fn, "groups", groups),
    )


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple | str = 0,
    dilation: _IntOrTuple = 1,
    groups: builtins.int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation) over ``(N, C, L)`` or unbatched ``(C, L)``.

    Args:
        input: the input, ``(N, C_in, L)`` or ``(C_in, L)``.
        weight: the filters, ``(C_out, C_in / groups, k)``.
        bias: optional ``(C_out,)``.
        stride, padding, dilation: an int or a one-element tuple; ``padding`` may also
            be ``"valid"`` (none) or ``"same"`` (output as long as the input; stride 1).
        groups: split the channels into this many independent groups.

    Returns:
        ``(N, C_out, L_out)`` (grad_fn ``ConvolutionBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv1d(rustgrad.ones(1, 1, 4), rustgrad.ones(1, 1, 2)).tolist()
        [[[2.0, 2.0, 2.0]]]
    """
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple | str = 0,
    dilation: _IntOrTuple = 1,
    groups: builtins.int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) over ``(N, C, H, W)`` or unbatched
    ``(C, H, W)``, computed by im2col and GEMM in Rust.

    Args:
        input: the input, ``(N, C_in, H, W)`` or ``(C_in, H, W)``.
        weight: the filters, ``(C_out, C_in / groups, kH, kW)``.
        bias: optional ``(C_out,)``.
        stride, padding, dilation: an int or a pair; ``padding`` may also be
            ``"valid"`` or ``"same"`` (stride 1; an odd total padding puts the extra
            zero after the input, as PyTorch does).
        groups: split the channels into this many independent groups (``groups ==
            C_in`` is a depthwise convolution).

    Returns:
        ``(N, C_out, H_out, W_out)`` (grad_fn ``ConvolutionBackward0``; an unbatched
        input gives ``(C_out, H_out, W_out)``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv2d(rustgrad.ones(1, 1, 3, 3), rustgrad.ones(1, 1, 2, 2)).tolist()
        [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple | str = 0,
    dilation: _IntOrTuple = 1,
    groups: builtins.int = 1,
) -> Tensor:
    """3-D convolution over ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``; the
    arguments are those of :func:`conv2d` with three spatial dims.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv3d(rustgrad.ones(1, 1, 2, 2, 2), rustgrad.ones(1, 1, 2, 2, 2)).tolist()
        [[[[[8.0]]]]]
    """
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    nd: builtins.int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: _IntOrTuple,
    padding: _IntOrTuple,
    output_padding: _IntOrTuple,
    groups: builtins.int,
    dilation: _IntOrTuple,
) -> Tensor:
    fn = f"conv_transpose{nd}d"
    _tensor(fn, "input", input)
    _tensor(fn, "weight", weight)
    _tensor(fn, "bias", bias, optional=True)
    return _rustgrad._conv_transpose(
        nd,
        input,
        weight,
        bias,
        _ints(fn, "stride", stride),
        _ints(fn, "padding", padding),
        _ints(fn, "output_padding", output_padding),
        _int(fn, "groups", groups),
        _ints(fn, "dilation", dilation),
    )


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple = 0,
    output_padding: _IntOrTuple = 0,
    groups: builtins.int = 1,
    dilation: _IntOrTuple = 1,
) -> Tensor:
    """1-D transposed convolution (the gradient of :func:`conv1d` in its input).

    Args:
        input: ``(N, C_in, L)`` or ``(C_in, L)``.
        weight: ``(C_in, C_out / groups, k)``.
        bias: optional ``(C_out,)``.
        stride, padding, output_padding, dilation: an int or a one-element tuple;
            ``output_padding`` (smaller than the stride or the dilation) adds to one
            side of the output.
        groups: channel groups.

    Returns:
        ``(N, C_out, (L - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1)``
        (grad_fn ``ConvolutionBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv_transpose1d(rustgrad.ones(1, 1, 2), rustgrad.ones(1, 1, 2)).tolist()
        [[[1.0, 2.0, 1.0]]]
    """
    return _conv_transpose(
        1, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple = 0,
    output_padding: _IntOrTuple = 0,
    groups: builtins.int = 1,
    dilation: _IntOrTuple = 1,
) -> Tensor:
    """2-D transposed convolution (the gradient of :func:`conv2d` in its input), over
    ``(N, C_in, H, W)`` or ``(C_in, H, W)`` with weight ``(C_in, C_out / groups, kH,
    kW)``; the arguments are those of :func:`conv_transpose1d` with pairs.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv_transpose2d(rustgrad.ones(1, 1, 1, 1), rustgrad.ones(1, 1, 2, 2)).shape
        rustgrad.Size([1, 1, 2, 2])
    """
    return _conv_transpose(
        2, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: _IntOrTuple = 1,
    padding: _IntOrTuple = 0,
    output_padding: _IntOrTuple = 0,
    groups: builtins.int = 1,
    dilation: _IntOrTuple = 1,
) -> Tensor:
    """3-D transposed convolution; see :func:`conv_transpose2d`.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.conv_transpose3d(rustgrad.ones(1, 1, 1, 1, 1), rustgrad.ones(1, 2, 2, 2, 2)).shape
        rustgrad.Size([1, 2, 2, 2, 2])
    """
    return _conv_transpose(
        3, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``.

    Args:
        input: ``(*, in_features)``.
        weight: ``(out_features, in_features)`` (or ``(in_features,)``).
        bias: optional ``(out_features,)`` (broadcast).

    Returns:
        ``(*, out_features)``; a 2-D input with a bias is one ``addmm``
        (``AddmmBackward0``), without a bias one ``mm`` (``MmBackward0``), as in PyTorch.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.linear(rustgrad.ones(1, 2), rustgrad.ones(3, 2), rustgrad.zeros(3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    _tensor("linear", "input", input)
    _tensor("linear", "weight", weight)
    _tensor("linear", "bias", bias, optional=True)
    return _rustgrad._linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = Σ_ij input1[..., i] · weight[o, i, j] · input2[..., j] + bias[o]``.

    Args:
        input1: ``(*, in1_features)``.
        input2: ``(*, in2_features)``, same leading dims.
        weight: ``(out_features, in1_features, in2_features)``.
        bias: optional ``(out_features,)``.

    Returns:
        ``(*, out_features)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.bilinear(rustgrad.ones(1, 2), rustgrad.ones(1, 3), rustgrad.ones(4, 2, 3)).tolist()
        [[6.0, 6.0, 6.0, 6.0]]
    """
    for name, value in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"bilinear(): argument '{name}' must be Tensor, not {type(value).__name__}"
            )
    return _rustgrad._bilinear(input1, input2, weight, bias)


def _pair(fn: str, name: str, value: Any) -> list[builtins.int]:
    values = _ints(fn, name, value)
    return values * 2 if len(values) == 1 else values


def unfold(
    input: Tensor,
    kernel_size: _IntOrTuple,
    dilation: _IntOrTuple = 1,
    padding: _IntOrTuple = 0,
    stride: _IntOrTuple = 1,
) -> Tensor:
    """Extracts sliding local blocks (im2col): ``(N, C, H, W)`` → ``(N, C·kH·kW, L)``
    (unbatched ``(C, H, W)`` → ``(C·kH·kW, L)``), ``L`` the number of blocks.

    Args:
        input: a 3-D or 4-D tensor.
        kernel_size, dilation, padding, stride: an int or a pair.

    Returns:
        The blocks as columns (grad_fn ``Im2ColBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.unfold(rustgrad.ones(1, 1, 3, 3), 2).shape
        rustgrad.Size([1, 4, 4])
    """
    fn = "im2col"
    _tensor("unfold", "input", input)
    return _rustgrad._unfold(
        input,
        _pair(fn, "kernel_size", kernel_size),
        _pair(fn, "dilation", dilation),
        _pair(fn, "padding", padding),
        _pair(fn, "stride", stride),
    )


def fold(
    input: Tensor,
    output_size: _IntOrTuple,
    kernel_size: _IntOrTuple,
    dilation: _IntOrTuple = 1,
    padding: _IntOrTuple = 0,
    stride: _IntOrTuple = 1,
) -> Tensor:
    """Sums sliding local blocks into an image (col2im, the adjoint of :func:`unfold`):
    ``(N, C·kH·kW, L)`` → ``(N, C, *output_size)`` (unbatched ``(C·kH·kW, L)`` →
    ``(C, *output_size)``).

    Args:
        input: a 2-D or 3-D tensor.
        output_size: the image's spatial size, an int or a pair.
        kernel_size, dilation, padding, stride: an int or a pair.

    Returns:
        The image, overlapping blocks summed (grad_fn ``Col2ImBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.fold(rustgrad.ones(1, 4, 4), 3, 2)[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    fn = "col2im"
    _tensor("fold", "input", input)
    return _rustgrad._fold(
        input,
        _pair(fn, "output_size", output_size),
        _pair(fn, "kernel_size", kernel_size),
        _pair(fn, "dilation", dilation),
        _pair(fn, "padding", padding),
        _pair(fn, "stride", stride),
    )


def pixel_shuffle(input: Tensor, upscale_factor: builtins.int) -> Tensor:
    """Rearranges ``(*, C·r², H, W)`` into ``(*, C, H·r, W·r)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.pixel_shuffle(rustgrad.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    _tensor("pixel_shuffle", "input", input)
    return _rustgrad._pixel_shuffle(input, _int("pixel_shuffle", "upscale_factor", upscale_factor))


def pixel_unshuffle(input: Tensor, downscale_factor: builtins.int) -> Tensor:
    """Rearranges ``(*, C, H·r, W·r)`` into ``(*, C·r², H, W)`` (the inverse of
    :func:`pixel_shuffle`).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.pixel_unshuffle(rustgrad.arange(4.0).reshape(1, 1, 2, 2), 2).flatten().tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    _tensor("pixel_unshuffle", "input", input)
    return _rustgrad._pixel_unshuffle(
        input, _int("pixel_unshuffle", "downscale_factor", downscale_factor)
    )
