"""``RMSprop`` (PyTorch's ``torch.optim.RMSprop``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check, _check_lr

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, optionally centered and with momentum; PyTorch's update rule, run
    in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        alpha: smoothing constant.
        eps: added to the denominator.
        weight_decay: L2 penalty.
        momentum: momentum factor.
        centered: normalise by the estimated variance.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.RMSprop([w], lr=0.01, centered=True)
        >>> opt.defaults["alpha"]
        0.99
    """

    _native_kind = "RMSprop"

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
