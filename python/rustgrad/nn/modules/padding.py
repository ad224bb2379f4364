"""Padding layers (PyTorch's ``torch/nn/modules/padding.py``)."""

from __future__ import annotations

from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from ._utils import _pair, _quadruple
from .module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
]


class _PadNd(Module):
    """``F.pad`` with a fixed padding and mode."""

    _mode = "constant"
    _ntuple: Any = _quadruple

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = type(self)._ntuple(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, type(self)._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with ``value``."""

    _ntuple = _pair


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with ``value``: (left, right, top, bottom)."""


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros: (left, right, top, bottom)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dimension with its reflection."""

    _mode = "reflect"
    _ntuple = _pair


class ReflectionPad2d(_PadNd):
    """Pads the last two dimensions with their reflection."""

    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dimension by repeating the edge."""

    _mode = "replicate"
    _ntuple = _pair


class ReplicationPad2d(_PadNd):
    """Pads the last two dimensions by repeating the edges."""

    _mode = "replicate"
