"""Pooling layers (PyTorch's ``torch/nn/modules/pooling.py``)."""

from __future__ import annotations

from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from ._utils import _single
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "MaxPool1d",
    "MaxPool2d",
]


class _MaxPoolNd(Module):
    _pool: Any = None

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )  # fmt: skip


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)``."""

    _pool = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)``.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.MaxPool2d(2, 2)
        MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    """

    _pool = staticmethod(F.max_pool2d)


class AvgPool1d(Module):
    """1-D average pooling over ``(N, C, L)``."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip


class AvgPool2d(Module):
    """2-D average pooling over ``(N, C, H, W)``."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        args: list[Any] = [
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        ]  # fmt: skip
        if self.divisor_override is not None:
            args.append(self.divisor_override)
        return F.avg_pool2d(*args)


class _AdaptivePoolNd(Module):
    _pool: Any = None

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """1-D adaptive average pooling to ``output_size``."""

    _pool = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """2-D adaptive average pooling to ``output_size`` (an int, a pair, None keeps a size)."""

    _pool = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-D adaptive max pooling to ``output_size`` (via the 2-D functional)."""

    @staticmethod
    def _pool(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
        size = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
        out = F.adaptive_max_pool2d(input.unsqueeze(-2), (1, size), return_indices)
        if return_indices:
            return out[0].squeeze(-2), out[1].squeeze(-2)
        return out.squeeze(-2)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D adaptive max pooling to ``output_size``."""

    _pool = staticmethod(F.adaptive_max_pool2d)
