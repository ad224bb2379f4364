"""``NAdam`` (PyTorch's ``torch.optim.NAdam``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check, _check_adam_like

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum); PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the moment averages.
        eps: added to the denominator.
        weight_decay: weight decay (L2, or decoupled).
        momentum_decay: momentum decay (psi).
        decoupled_weight_decay: decay as AdamW.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.NAdam([w])
        >>> opt.defaults["momentum_decay"]
        0.004
    """

    _native_kind = "NAdam"
    _scalar_state = (("step", 0.0), ("mu_product", 1.0))

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_adam_like(lr, eps, betas, weight_decay)
        _check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
