"""Gradient clipping (PyTorch's ``torch/nn/utils/clip_grad.py``)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

from ..._rustgrad import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scales the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).

    Example:
        >>> import rustgrad
        >>> p = rustgrad.nn.Parameter(rustgrad.ones(4))
        >>> p.grad = rustgrad.full((4,), 3.0)
        >>> rustgrad.nn.utils.clip_grad_norm_([p], 1.0)
        tensor(6.)
    """
    from ... import stack, tensor

    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.detach().abs().max() for g in grads]
            total_norm = norms[0] if len(norms) == 1 else stack(norms).max()
        else:
            norms = [g.detach().norm(norm_type) for g in grads]
            total_norm = stack(norms).norm(norm_type)
        if error_if_nonfinite and (total_norm.isnan() | total_norm.isinf()).item():
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = clip_coef.clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))
    return total_norm


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: Any = None
) -> None:
    """Clamps every gradient in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
