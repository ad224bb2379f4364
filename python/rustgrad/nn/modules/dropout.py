"""Dropout modules (PyTorch's ``torch/nn/modules/dropout.py``): active in training mode,
the identity in eval mode."""

from __future__ import annotations

from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from .module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn: Any = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)


class Dropout(_DropoutNd):
    """Zeroes elements with probability ``p`` and scales the rest by ``1 / (1 - p)``."""

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, L)``."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, H, W)``."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of ``(N, C, D, H, W)``."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalising mean and variance."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)
