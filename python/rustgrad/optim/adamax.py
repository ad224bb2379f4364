"""``Adamax`` (PyTorch's ``torch.optim.Adamax``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check_adam_like

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Adam over the infinity norm); PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first moment and of the infinity norm.
        eps: added to the gradient magnitude.
        weight_decay: L2 penalty.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.Adamax([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0.9000, 0.9000], requires_grad=True)
    """

    _native_kind = "Adamax"

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check_adam_like(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)
