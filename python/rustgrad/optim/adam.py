"""``Adam`` (PyTorch's ``torch.optim.Adam``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check_adam_like

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam, with ``amsgrad``, ``maximize`` and optionally decoupled weight decay;
    PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment averages.
        eps: added to the denominator.
        weight_decay: L2 penalty (decoupled when ``decoupled_weight_decay``).
        amsgrad: use the running maximum of the second moment.
        maximize: ascend instead of descend.
        decoupled_weight_decay: AdamW's decay.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0.9000, 0.9000], requires_grad=True)
    """

    _native_kind = "Adam"

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check_adam_like(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
