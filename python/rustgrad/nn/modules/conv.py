"""Convolutions (PyTorch's ``torch/nn/modules/conv.py``): Conv1d/2d/3d and
ConvTranspose1d/2d/3d over the functionals, with PyTorch's initialisation and repr."""

from __future__ import annotations

import math
from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._utils import _empty, _pair, _single, _triple
from .module import Module

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """What every convolution shares: arguments, parameters, initialisation, repr."""

    _ntuple: Any = _single
    _conv: Any = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        transposed: bool,
        output_padding: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        ntuple = type(self)._ntuple
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in ntuple(stride)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {sorted(_PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = ntuple(kernel_size)
        self.stride = ntuple(stride)
        self.padding = padding if isinstance(padding, str) else ntuple(padding)
        self.dilation = ntuple(dilation)
        self.transposed = transposed
        self.output_padding = ntuple(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            pads: list[int] = []
            if padding == "same":
                for d, k in zip(self.dilation, self.kernel_size):
                    total = d * (k - 1)
                    left = total // 2
                    pads = [left, total - left] + pads
            else:
                pads = [0, 0] * len(self.kernel_size)
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = [
                p for p in reversed(self.padding) for _ in range(2)
            ]
        if transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(_empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: kaiming_uniform_(a=sqrt(5)) and a uniform bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def forward(self, input: Tensor) -> Tensor:
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)``."""

    _ntuple = _single
    _conv = staticmethod(F.conv1d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation,
            False, 0, groups, bias, padding_mode, dtype, device,
        )  # fmt: skip


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)``.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.Conv2d(3, 6, 5)
        Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))
    """

    _ntuple = _pair
    _conv = staticmethod(F.conv2d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation,
            False, 0, groups, bias, padding_mode, dtype, device,
        )  # fmt: skip


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C_in, D, H, W)``."""

    _ntuple = _triple
    _conv = staticmethod(F.conv3d)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation,
            False, 0, groups, bias, padding_mode, dtype, device,
        )  # fmt: skip


class _ConvTransposeNd(_ConvNd):
    """Transposed convolutions: only ``padding_mode="zeros"``; ``forward`` takes an
    optional ``output_size`` that picks the output padding."""

    def __init__(self, *args: Any) -> None:
        if args[10] != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(*args)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        k = len(self.kernel_size)
        output_size = list(output_size)[-k:]
        result = []
        for d in range(k):
            dim_size = input.size(d + input.dim() - k)
            min_size = (
                (dim_size - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            max_size = min_size + self.stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_size} to {max_size} (for an input of {list(input.shape)[2:]})"
                )
            result.append(output_size[d] - min_size)
        return tuple(result)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return type(self)._conv(
            input, self.weight, self.bias, self.stride, self.padding,
            output_padding, self.groups, self.dilation,
        )  # fmt: skip


def _transpose_init(ntuple: Any, conv: Any) -> Any:
    def __init__(
        self: _ConvTransposeNd,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        _ConvTransposeNd.__init__(
            self, in_channels, out_channels, kernel_size, stride, padding, dilation,
            True, output_padding, groups, bias, padding_mode, dtype, device,
        )  # fmt: skip

    return __init__


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the gradient of Conv1d with respect to its input)."""

    _ntuple = _single
    _conv = staticmethod(F.conv_transpose1d)
    __init__ = _transpose_init(_single, F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""

    _ntuple = _pair
    _conv = staticmethod(F.conv_transpose2d)
    __init__ = _transpose_init(_pair, F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution (the gradient of Conv3d with respect to its input)."""

    _ntuple = _triple
    _conv = staticmethod(F.conv_transpose3d)
    __init__ = _transpose_init(_triple, F.conv_transpose3d)
