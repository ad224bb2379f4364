"""``RAdam`` (PyTorch's ``torch.optim.RAdam``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check_adam_like

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (rectified Adam); PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the moment averages.
        eps: added to the denominator.
        weight_decay: weight decay (L2, or decoupled).
        decoupled_weight_decay: decay as AdamW.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.RAdam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0.8000, 0.8000], requires_grad=True)
    """

    _native_kind = "RAdam"

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_adam_like(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
