"""Pooling layers (PyTorch's ``torch/nn/modules/pooling.py``)."""

from __future__ import annotations

from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from ._utils import _pair, _single, _triple
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
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


class _AvgPoolNd(Module):
    _pool: Any = None

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
        return type(self)._pool(*args)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over ``(N, C, H, W)``."""

    _pool = staticmethod(F.avg_pool2d)


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
    """1-D adaptive max pooling to ``output_size``."""

    _pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D adaptive max pooling to ``output_size``."""

    _pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """3-D adaptive average pooling to ``output_size`` (an int, a triple, None keeps a
    size), over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _pool = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-D adaptive max pooling to ``output_size``."""

    _pool = staticmethod(F.adaptive_max_pool3d)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.MaxPool3d(2)
        MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    """

    _pool = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _pool = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    _pool: Any = None

    def __init__(
        self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
    ) -> None:
        super().__init__()
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._pool(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling: ``(sum over the window of x^p)^(1/p)``."""

    _pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.LPPool2d(2, 3)
        LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)
    """

    _pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling."""

    _pool = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _unpool: Any = None
    _tuple: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        make = type(self)._tuple
        self.kernel_size = make(kernel_size)
        self.stride = make(stride if (stride is not None) else kernel_size)
        self.padding = make(padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return type(self)._unpool(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool1d`."""

    _unpool = staticmethod(F.max_unpool1d)
    _tuple = staticmethod(_single)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool2d`.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.MaxUnpool2d(2)
        MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))
    """

    _unpool = staticmethod(F.max_unpool2d)
    _tuple = staticmethod(_pair)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool3d`."""

    _unpool = staticmethod(F.max_unpool3d)
    _tuple = staticmethod(_triple)


class _FractionalMaxPoolNd(Module):
    _rank = 2

    def __init__(
        self,
        kernel_size: Any,
        output_size: Any = None,
        output_ratio: Any = None,
        return_indices: bool = False,
        _random_samples: Any = None,
    ) -> None:
        super().__init__()
        rank = type(self)._rank
        make = _pair if rank == 2 else _triple
        name = type(self).__name__
        if rank == 3 and (
            (isinstance(kernel_size, int) and kernel_size <= 0)
            or (isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))
        ):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = make(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = make(output_size) if output_size is not None else None
        self.output_ratio = make(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        fn = F.fractional_max_pool2d if type(self)._rank == 2 else F.fractional_max_pool3d
        return fn(
            input, self.kernel_size, self.output_size, self.output_ratio,
            self.return_indices, _random_samples=self._random_samples,
        )  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling (see :func:`~rustgrad.nn.functional.fractional_max_pool2d`);
    a ``_random_samples`` buffer, when given, fixes the windows."""

    _rank = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling (see :func:`~rustgrad.nn.functional.fractional_max_pool3d`)."""

    _rank = 3
