"""``SGD``: stochastic gradient descent (PyTorch's ``torch.optim.SGD``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check, _check_lr

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov momentum, weight
    decay and ``maximize``; PyTorch's update rule, run in Rust.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        momentum: momentum factor.
        dampening: dampening for momentum.
        weight_decay: L2 penalty.
        nesterov: Nesterov momentum.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.SGD([w], lr=0.5, momentum=0.9)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0., 0.], requires_grad=True)
    """

    _native_kind = "SGD"
    _scalar_state = ()

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        _check(
            not (nesterov and (momentum <= 0 or dampening != 0)),
            "Nesterov momentum requires a momentum and zero dampening",
        )
        super().__init__(params, defaults)

    def _group_has_state(self, group: dict[str, Any]) -> bool:
        return group["momentum"] != 0
