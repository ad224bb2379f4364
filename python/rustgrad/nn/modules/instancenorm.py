"""Instance normalisation (PyTorch's ``torch/nn/modules/instancenorm.py``)."""

from __future__ import annotations

from typing import Any

from ..._rustgrad import Tensor
from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _batched_dim = 4

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _check_input_dim(self, input: Tensor) -> None:
        batched = type(self)._batched_dim
        if input.dim() not in (batched - 1, batched):
            raise ValueError(
                f"expected {batched - 1}D or {batched}D input (got {input.dim()}D input)"
            )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.dim() == type(self)._batched_dim - 1
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over ``(N, C, L)`` or ``(C, L)``."""

    _batched_dim = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over ``(N, C, H, W)`` or ``(C, H, W)``.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.InstanceNorm2d(3)(rustgrad.ones(1, 3, 2, 2)).shape
        torch.Size([1, 3, 2, 2])
    """

    _batched_dim = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _batched_dim = 5
