"""``Adadelta`` (PyTorch's ``torch.optim.Adadelta``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check, _check_lr

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta; PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: scale of the delta.
        rho: decay of the running averages.
        eps: added inside the square roots.
        weight_decay: L2 penalty.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.Adadelta([w])
        >>> opt.defaults["rho"]
        0.9
    """

    _native_kind = "Adadelta"

    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
